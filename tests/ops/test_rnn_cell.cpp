// lstm_cell and gru_cell over the table in tests/cases/rnn_cases.h: forward values against the
// textbook formulas written out in double here, float64 gradient checks (with and without
// masked samples), and the masking rules (inactive samples copy their state, get no gate
// gradient, pass their state gradient back).
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "engine/ops.h"
#include "engine/ops/rnn_cell.h"
#include "tests/cases/rnn_cases.h"
#include "tests/ops/op_test_util.h"

using namespace sonata;
using namespace sonata::testing;

namespace {

double sigmoid_ref(double x) {
  return 1.0 / (1.0 + std::exp(-x));
}

struct CellInputs {
  Tensor gates_x, gates_h, h_prev, c_prev;
};

CellInputs make_inputs(const RnnCellCase& c, int64_t gates, uint64_t seed) {
  return {grad_input({c.batch, gates * c.hidden}, seed, -2, 2),
          grad_input({c.batch, gates * c.hidden}, seed + 1, -2, 2),
          grad_input({c.batch, c.hidden}, seed + 2), grad_input({c.batch, c.hidden}, seed + 3)};
}

}  // namespace

TEST_CASE("lstm_cell forward matches the formulas, inactive samples keep their state",
          "[rnn_cell][lstm]") {
  for (const RnnCellCase& test : rnn_cell_cases())
    for (bool masked : {true, false}) {
      INFO(test.name << ", masked " << masked);
      const int64_t hidden = test.hidden;
      const CellInputs in = make_inputs(test, 4, 11);
      const LstmState out = lstm_cell(in.gates_x, in.gates_h, in.h_prev, in.c_prev,
                                      masked ? test.lengths_tensor() : Tensor(), test.step);
      const auto gx = values_of(in.gates_x), gh = values_of(in.gates_h);
      const auto hp = values_of(in.h_prev), cp = values_of(in.c_prev);
      const auto h = values_of(out.h), c = values_of(out.c);
      for (int64_t b = 0; b < test.batch; ++b) {
        for (int64_t j = 0; j < hidden; ++j) {
          const size_t e = size_t(b * hidden + j);
          INFO("sample " << b << " unit " << j);
          if (masked && !test.active(b)) {
            CHECK(h[e] == hp[e]);
            CHECK(c[e] == cp[e]);
            continue;
          }
          auto pre = [&](int k) {
            const size_t at = size_t(b * 4 * hidden + k * hidden + j);
            return gx[at] + gh[at];
          };
          const double i = sigmoid_ref(pre(0)), f = sigmoid_ref(pre(1)), g = std::tanh(pre(2)),
                       o = sigmoid_ref(pre(3));
          const double c_ref = f * cp[e] + i * g;
          CHECK(c[e] == Approx(c_ref).epsilon(1e-14));
          CHECK(h[e] == Approx(o * std::tanh(c_ref)).epsilon(1e-14));
        }
      }
    }
}

TEST_CASE("gru_cell forward matches the formulas, inactive samples keep their state",
          "[rnn_cell][gru]") {
  for (const RnnCellCase& test : rnn_cell_cases())
    for (bool masked : {true, false}) {
      INFO(test.name << ", masked " << masked);
      const int64_t hidden = test.hidden;
      const CellInputs in = make_inputs(test, 3, 21);
      const Tensor h = gru_cell(in.gates_x, in.gates_h, in.h_prev,
                                masked ? test.lengths_tensor() : Tensor(), test.step);
      const auto gx = values_of(in.gates_x), gh = values_of(in.gates_h), hp = values_of(in.h_prev);
      const auto hv = values_of(h);
      for (int64_t b = 0; b < test.batch; ++b) {
        for (int64_t j = 0; j < hidden; ++j) {
          const size_t e = size_t(b * hidden + j);
          INFO("sample " << b << " unit " << j);
          if (masked && !test.active(b)) {
            CHECK(hv[e] == hp[e]);
            continue;
          }
          const size_t row = size_t(b * 3 * hidden + j);
          const double r = sigmoid_ref(gx[row] + gh[row]);
          const double z = sigmoid_ref(gx[row + hidden] + gh[row + hidden]);
          const double n = std::tanh(gx[row + 2 * hidden] + r * gh[row + 2 * hidden]);
          CHECK(hv[e] == Approx((1 - z) * n + z * hp[e]).epsilon(1e-14));
        }
      }
    }
}

TEST_CASE("lstm_cell gradients (float64), with and without masked samples", "[rnn_cell][lstm]") {
  for (const RnnCellCase& test : rnn_cell_cases()) {
    const CellInputs in = make_inputs(test, 4, 31);
    const std::vector<Tensor> inputs{in.gates_x, in.gates_h, in.h_prev, in.c_prev};
    for (bool ragged : {false, true}) {
      INFO(test.name << ", ragged " << ragged);
      const Tensor lengths = ragged ? test.lengths_tensor() : Tensor();
      require_gradients(
          [&](const std::vector<Tensor>& x) {
            const LstmState s = lstm_cell(x[0], x[1], x[2], x[3], lengths, test.step);
            return cat({s.h, s.c}, 1);
          },
          inputs);
      // Only h used: c's gradient never arrives (undefined) and must count as zero.
      require_gradients(
          [&](const std::vector<Tensor>& x) {
            return lstm_cell(x[0], x[1], x[2], x[3], lengths, test.step).h;
          },
          inputs);
    }
  }
}

TEST_CASE("gru_cell gradients (float64), with and without masked samples", "[rnn_cell][gru]") {
  for (const RnnCellCase& test : rnn_cell_cases()) {
    const CellInputs in = make_inputs(test, 3, 41);
    for (bool ragged : {false, true}) {
      INFO(test.name << ", ragged " << ragged);
      const Tensor lengths = ragged ? test.lengths_tensor() : Tensor();
      require_gradients(
          [&](const std::vector<Tensor>& x) {
            return gru_cell(x[0], x[1], x[2], lengths, test.step);
          },
          {in.gates_x, in.gates_h, in.h_prev});
    }
  }
}

TEST_CASE("rnn cells: masked samples pass their state gradient straight through",
          "[rnn_cell][lstm][gru]") {
  for (const RnnCellCase& test : rnn_cell_cases()) {
    const Tensor lengths = test.lengths_tensor();
    const int64_t hidden = test.hidden;
    {
      const CellInputs in = make_inputs(test, 4, 51);
      const LstmState s =
          lstm_cell(in.gates_x, in.gates_h, in.h_prev, in.c_prev, lengths, test.step);
      const Tensor wh = grad_input({test.batch, hidden}, 52).detach();
      const Tensor wc = grad_input({test.batch, hidden}, 53).detach();
      add(sum(mul(s.h, wh)), sum(mul(s.c, wc))).backward();
      for (int64_t inactive = 0; inactive < test.batch; ++inactive) {
        if (test.active(inactive)) continue;
        INFO(test.name << ", lstm, inactive sample " << inactive);
        const Tensor row = in.gates_x.grad().select(0, inactive);
        CHECK(values_of(row) == std::vector<double>(size_t(4 * hidden), 0.0));
        CHECK(values_of(in.gates_h.grad().select(0, inactive)) ==
              std::vector<double>(size_t(4 * hidden), 0.0));
        CHECK(values_of(in.h_prev.grad().select(0, inactive)) == values_of(wh.select(0, inactive)));
        CHECK(values_of(in.c_prev.grad().select(0, inactive)) == values_of(wc.select(0, inactive)));
      }
    }
    {
      const CellInputs in = make_inputs(test, 3, 61);
      const Tensor h = gru_cell(in.gates_x, in.gates_h, in.h_prev, lengths, test.step);
      const Tensor wh = grad_input({test.batch, hidden}, 62).detach();
      sum(mul(h, wh)).backward();
      for (int64_t inactive = 0; inactive < test.batch; ++inactive) {
        if (test.active(inactive)) continue;
        INFO(test.name << ", gru, inactive sample " << inactive);
        CHECK(values_of(in.gates_x.grad().select(0, inactive)) ==
              std::vector<double>(size_t(3 * hidden), 0.0));
        CHECK(values_of(in.gates_h.grad().select(0, inactive)) ==
              std::vector<double>(size_t(3 * hidden), 0.0));
        CHECK(values_of(in.h_prev.grad().select(0, inactive)) == values_of(wh.select(0, inactive)));
      }
    }
  }
}

TEST_CASE("rnn cells reject mismatched shapes and lengths", "[rnn_cell]") {
  const CellInputs in = make_inputs(rnn_cell_cases()[0], 4, 71);
  CHECK_THROWS(lstm_cell(in.gates_x, in.gates_h, in.h_prev, in.c_prev.slice(1, 0, 2)));
  CHECK_THROWS(gru_cell(in.gates_x, in.gates_h, in.h_prev));  // 4H gates for a GRU
  CHECK_THROWS(lstm_cell(in.gates_x, in.gates_h, in.h_prev, in.c_prev, i64_tensor({1, 2}, {2})));
}

// lstm_cell and gru_cell: forward values against the textbook formulas written out in double
// here, float64 gradient checks (active and masked samples together), and the masking rules
// (inactive samples copy their state, get no gate gradient, pass their state gradient back).
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "engine/ops.h"
#include "engine/ops/rnn_cell.h"
#include "tests/ops/op_test_util.h"

using namespace sonata;
using namespace sonata::testing;

namespace {

constexpr int64_t kBatch = 3, kHidden = 4;
// At step 2: sample 0 active (2 < 4), sample 1 inactive (2 >= 2), sample 2 active.
const std::vector<int64_t> kLengths{4, 2, 3};
constexpr int64_t kStep = 2;

double sigmoid_ref(double x) {
  return 1.0 / (1.0 + std::exp(-x));
}

struct CellInputs {
  Tensor gates_x, gates_h, h_prev, c_prev;
};

CellInputs make_inputs(int64_t gates, uint64_t seed) {
  return {grad_input({kBatch, gates * kHidden}, seed, -2, 2),
          grad_input({kBatch, gates * kHidden}, seed + 1, -2, 2),
          grad_input({kBatch, kHidden}, seed + 2), grad_input({kBatch, kHidden}, seed + 3)};
}

}  // namespace

TEST_CASE("lstm_cell forward matches the formulas, inactive samples keep their state",
          "[rnn_cell][lstm]") {
  const CellInputs in = make_inputs(4, 11);
  const LstmState out = lstm_cell(in.gates_x, in.gates_h, in.h_prev, in.c_prev,
                                  i64_tensor(kLengths, {kBatch}), kStep);
  const auto gx = values_of(in.gates_x), gh = values_of(in.gates_h);
  const auto hp = values_of(in.h_prev), cp = values_of(in.c_prev);
  const auto h = values_of(out.h), c = values_of(out.c);
  for (int64_t b = 0; b < kBatch; ++b) {
    for (int64_t j = 0; j < kHidden; ++j) {
      const size_t e = size_t(b * kHidden + j);
      INFO("sample " << b << " unit " << j);
      if (kStep >= kLengths[size_t(b)]) {
        CHECK(h[e] == hp[e]);
        CHECK(c[e] == cp[e]);
        continue;
      }
      auto pre = [&](int k) {
        const size_t at = size_t(b * 4 * kHidden + k * kHidden + j);
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

TEST_CASE("gru_cell forward matches the formulas, inactive samples keep their state",
          "[rnn_cell][gru]") {
  const CellInputs in = make_inputs(3, 21);
  const Tensor h =
      gru_cell(in.gates_x, in.gates_h, in.h_prev, i64_tensor(kLengths, {kBatch}), kStep);
  const auto gx = values_of(in.gates_x), gh = values_of(in.gates_h), hp = values_of(in.h_prev);
  const auto hv = values_of(h);
  for (int64_t b = 0; b < kBatch; ++b) {
    for (int64_t j = 0; j < kHidden; ++j) {
      const size_t e = size_t(b * kHidden + j);
      INFO("sample " << b << " unit " << j);
      if (kStep >= kLengths[size_t(b)]) {
        CHECK(hv[e] == hp[e]);
        continue;
      }
      const size_t row = size_t(b * 3 * kHidden + j);
      const double r = sigmoid_ref(gx[row] + gh[row]);
      const double z = sigmoid_ref(gx[row + kHidden] + gh[row + kHidden]);
      const double n = std::tanh(gx[row + 2 * kHidden] + r * gh[row + 2 * kHidden]);
      CHECK(hv[e] == Approx((1 - z) * n + z * hp[e]).epsilon(1e-14));
    }
  }
}

TEST_CASE("lstm_cell gradients (float64), with and without masked samples", "[rnn_cell][lstm]") {
  const CellInputs in = make_inputs(4, 31);
  const std::vector<Tensor> inputs{in.gates_x, in.gates_h, in.h_prev, in.c_prev};
  for (bool ragged : {false, true}) {
    INFO("ragged " << ragged);
    const Tensor lengths = ragged ? i64_tensor(kLengths, {kBatch}) : Tensor();
    require_gradients(
        [&](const std::vector<Tensor>& x) {
          const LstmState s = lstm_cell(x[0], x[1], x[2], x[3], lengths, kStep);
          return cat({s.h, s.c}, 1);
        },
        inputs);
    // Only h used: c's gradient never arrives (undefined) and must count as zero.
    require_gradients(
        [&](const std::vector<Tensor>& x) {
          return lstm_cell(x[0], x[1], x[2], x[3], lengths, kStep).h;
        },
        inputs);
  }
}

TEST_CASE("gru_cell gradients (float64), with and without masked samples", "[rnn_cell][gru]") {
  const CellInputs in = make_inputs(3, 41);
  for (bool ragged : {false, true}) {
    INFO("ragged " << ragged);
    const Tensor lengths = ragged ? i64_tensor(kLengths, {kBatch}) : Tensor();
    require_gradients(
        [&](const std::vector<Tensor>& x) { return gru_cell(x[0], x[1], x[2], lengths, kStep); },
        {in.gates_x, in.gates_h, in.h_prev});
  }
}

TEST_CASE("rnn cells: masked samples pass their state gradient straight through",
          "[rnn_cell][lstm][gru]") {
  const Tensor lengths = i64_tensor(kLengths, {kBatch});
  const int64_t inactive = 1;
  {
    const CellInputs in = make_inputs(4, 51);
    const LstmState s = lstm_cell(in.gates_x, in.gates_h, in.h_prev, in.c_prev, lengths, kStep);
    const Tensor wh = grad_input({kBatch, kHidden}, 52).detach();
    const Tensor wc = grad_input({kBatch, kHidden}, 53).detach();
    add(sum(mul(s.h, wh)), sum(mul(s.c, wc))).backward();
    const Tensor row = in.gates_x.grad().select(0, inactive);
    CHECK(values_of(row) == std::vector<double>(4 * kHidden, 0.0));
    CHECK(values_of(in.gates_h.grad().select(0, inactive)) ==
          std::vector<double>(4 * kHidden, 0.0));
    CHECK(values_of(in.h_prev.grad().select(0, inactive)) == values_of(wh.select(0, inactive)));
    CHECK(values_of(in.c_prev.grad().select(0, inactive)) == values_of(wc.select(0, inactive)));
  }
  {
    const CellInputs in = make_inputs(3, 61);
    const Tensor h = gru_cell(in.gates_x, in.gates_h, in.h_prev, lengths, kStep);
    const Tensor wh = grad_input({kBatch, kHidden}, 62).detach();
    sum(mul(h, wh)).backward();
    CHECK(values_of(in.gates_x.grad().select(0, inactive)) ==
          std::vector<double>(3 * kHidden, 0.0));
    CHECK(values_of(in.gates_h.grad().select(0, inactive)) ==
          std::vector<double>(3 * kHidden, 0.0));
    CHECK(values_of(in.h_prev.grad().select(0, inactive)) == values_of(wh.select(0, inactive)));
  }
}

TEST_CASE("rnn cells reject mismatched shapes and lengths", "[rnn_cell]") {
  const CellInputs in = make_inputs(4, 71);
  CHECK_THROWS(lstm_cell(in.gates_x, in.gates_h, in.h_prev, in.c_prev.slice(1, 0, 2)));
  CHECK_THROWS(gru_cell(in.gates_x, in.gates_h, in.h_prev));  // 4H gates for a GRU
  CHECK_THROWS(lstm_cell(in.gates_x, in.gates_h, in.h_prev, in.c_prev, i64_tensor({1, 2}, {2})));
}

// lstm_sequence and gru_sequence over the table in tests/cases/rnn_cases.h: a whole LSTM / GRU
// direction as one node, held to finite differences (float64) and to the per-step composition
// it replaces (matmul + cell each step), forward and backward, in both directions, with ragged
// lengths and initial states.
#include <catch2/catch.hpp>

#include <functional>
#include <vector>

#include "engine/ops.h"
#include "engine/ops/rnn_cell.h"
#include "engine/ops/rnn_sequence.h"
#include "engine/random.h"
#include "tests/cases/rnn_cases.h"
#include "tests/ops/op_test_util.h"
#include "tests/support/grad_check.h"
#include "tests/support/tensor_compare.h"

using namespace sonata;
using namespace sonata::testing;

namespace {

// The per-step composition, as the layer ran before the fused node.
LstmSequence step_by_step(const Tensor& gates_x, const Tensor& weight_hh, Tensor h, Tensor c,
                          const Tensor& lengths, bool reverse) {
  const int64_t steps = gates_x.size(0);
  std::vector<Tensor> outputs(static_cast<size_t>(steps));
  for (int64_t s = 0; s < steps; ++s) {
    const int64_t t = reverse ? steps - 1 - s : s;
    const LstmState next =
        lstm_cell(gates_x.select(0, t), matmul(h, weight_hh.t()), h, c, lengths, t);
    h = next.h;
    c = next.c;
    outputs[size_t(t)] = h;
  }
  return {stack(outputs, 0), h, c};
}

Tensor all_outputs(const LstmSequence& run) {
  return cat({run.output.reshape({-1}), run.h.reshape({-1}), run.c.reshape({-1})}, 0);
}

// Runs `fused` and `composed` each on fresh leaves, backpropagates one random upstream
// through both, and checks the outputs and every leaf's gradient agree to rounding.
using SequenceRun = std::function<Tensor(const std::vector<Tensor>&)>;
void check_same_as_composition(const std::function<std::vector<Tensor>()>& make_leaves,
                               const SequenceRun& fused, const SequenceRun& composed) {
  std::vector<std::vector<double>> results[2];
  Tensor upstream;
  for (int k = 0; k < 2; ++k) {
    const std::vector<Tensor> x = make_leaves();
    const Tensor out = k == 0 ? composed(x) : fused(x);
    if (!upstream.defined()) upstream = randn({out.numel()}, TensorOptions{}.with(DType::f64));
    sum(mul(out, upstream)).backward();
    results[k].push_back(out.to_vector<double>());
    for (const Tensor& leaf : x) results[k].push_back(leaf.grad().to_vector<double>());
  }
  for (size_t k = 0; k < results[0].size(); ++k) {
    INFO("result " << k << " (0: outputs, then the gradients of the inputs)");
    REQUIRE(results[0][k].size() == results[1][k].size());
    for (size_t e = 0; e < results[0][k].size(); ++e)
      CHECK(results[1][k][e] == Approx(results[0][k][e]).epsilon(1e-12).margin(1e-14));
  }
}

std::vector<Tensor> leaves(const RnnSequenceCase& c) {
  return {grad_input({c.steps, c.batch, 4 * c.hidden}, 1, -1.5, 1.5),
          grad_input({4 * c.hidden, c.hidden}, 2, -0.6, 0.6), grad_input({c.batch, c.hidden}, 3),
          grad_input({c.batch, c.hidden}, 4)};
}

}  // namespace

TEST_CASE("lstm_sequence gradients (float64): both directions, ragged, initial states",
          "[lstm][rnn_sequence]") {
  for (const RnnSequenceCase& test : rnn_sequence_cases()) {
    if (test.large) continue;
    const std::vector<Tensor> inputs = leaves(test);
    const Tensor lengths = test.lengths_tensor();
    for (const bool reverse : {false, true}) {
      INFO(test.name << ", reverse " << reverse);
      const GradCheckResult all = check_gradients(
          [&](const std::vector<Tensor>& x) {
            return all_outputs(lstm_sequence(x[0], x[1], x[2], x[3], lengths, reverse));
          },
          inputs);
      INFO(all.report);
      CHECK(all.ok);
      // Only the sequence output used: the final states' gradients never arrive.
      const GradCheckResult output_only = check_gradients(
          [&](const std::vector<Tensor>& x) {
            return lstm_sequence(x[0], x[1], x[2], x[3], lengths, reverse).output;
          },
          inputs);
      INFO(output_only.report);
      CHECK(output_only.ok);
    }
  }
}

TEST_CASE("lstm_sequence equals the per-step composition, values and gradients",
          "[lstm][rnn_sequence]") {
  for (const RnnSequenceCase& test : rnn_sequence_cases()) {
    const Tensor lengths = test.lengths_tensor();
    for (const bool reverse : {false, true}) {
      INFO(test.name << ", reverse " << reverse);
      check_same_as_composition(
          [&] { return leaves(test); },
          [&](const std::vector<Tensor>& x) {
            return all_outputs(lstm_sequence(x[0], x[1], x[2], x[3], lengths, reverse));
          },
          [&](const std::vector<Tensor>& x) {
            return all_outputs(step_by_step(x[0], x[1], x[2], x[3], lengths, reverse));
          });
    }
  }
}

TEST_CASE("lstm_sequence rejects mismatched shapes naming them", "[rnn_sequence]") {
  const std::vector<Tensor> x = leaves(rnn_sequence_cases()[0]);
  CHECK_THROWS_WITH(lstm_sequence(x[0], x[1].slice(0, 0, 8), x[2], x[3]),
                    Catch::Contains("weight_hh must be [16, 4]"));
  CHECK_THROWS_WITH(lstm_sequence(x[0].slice(2, 0, 8), x[1], x[2], x[3]),
                    Catch::Contains("gates_x must be [T, 3, 16]"));
  CHECK_THROWS_WITH(lstm_sequence(x[0], x[1], x[2], x[3], i64_tensor({1, 2}, {2})),
                    Catch::Contains("lengths must be i64 [3]"));
}

namespace {

GruSequence gru_step_by_step(const Tensor& gates_x, const Tensor& weight_hh, const Tensor& bias_hh,
                             Tensor h, const Tensor& lengths, bool reverse) {
  const int64_t steps = gates_x.size(0);
  std::vector<Tensor> outputs(static_cast<size_t>(steps));
  for (int64_t s = 0; s < steps; ++s) {
    const int64_t t = reverse ? steps - 1 - s : s;
    const Tensor gates_h =
        bias_hh.defined() ? addmm(bias_hh, h, weight_hh.t()) : matmul(h, weight_hh.t());
    h = gru_cell(gates_x.select(0, t), gates_h, h, lengths, t);
    outputs[size_t(t)] = h;
  }
  return {stack(outputs, 0), h};
}

std::vector<Tensor> gru_leaves(const RnnSequenceCase& c) {
  return {grad_input({c.steps, c.batch, 3 * c.hidden}, 5, -1.5, 1.5),
          grad_input({3 * c.hidden, c.hidden}, 6, -0.6, 0.6), grad_input({3 * c.hidden}, 7),
          grad_input({c.batch, c.hidden}, 8)};
}

}  // namespace

TEST_CASE("gru_sequence gradients (float64): both directions, ragged, with and without b_hh",
          "[gru][rnn_sequence]") {
  for (const RnnSequenceCase& test : rnn_sequence_cases()) {
    if (test.large) continue;
    const std::vector<Tensor> inputs = gru_leaves(test);
    const Tensor lengths = test.lengths_tensor();
    for (const bool reverse : {false, true})
      for (const bool bias : {true, false}) {
        INFO(test.name << ", reverse " << reverse << " bias " << bias);
        const GradCheckResult result = check_gradients(
            [&](const std::vector<Tensor>& x) {
              const GruSequence run =
                  gru_sequence(x[0], x[1], bias ? x[2] : Tensor(), x[3], lengths, reverse);
              return cat({run.output.reshape({-1}), run.h.reshape({-1})}, 0);
            },
            inputs);
        INFO(result.report);
        CHECK(result.ok);
      }
  }
}

TEST_CASE("gru_sequence equals the per-step composition, values and gradients",
          "[gru][rnn_sequence]") {
  auto outputs = [](const GruSequence& run) {
    return cat({run.output.reshape({-1}), run.h.reshape({-1})}, 0);
  };
  for (const RnnSequenceCase& test : rnn_sequence_cases()) {
    const Tensor lengths = test.lengths_tensor();
    for (const bool reverse : {false, true}) {
      INFO(test.name << ", reverse " << reverse);
      check_same_as_composition(
          [&] { return gru_leaves(test); },
          [&](const std::vector<Tensor>& x) {
            return outputs(gru_sequence(x[0], x[1], x[2], x[3], lengths, reverse));
          },
          [&](const std::vector<Tensor>& x) {
            return outputs(gru_step_by_step(x[0], x[1], x[2], x[3], lengths, reverse));
          });
    }
  }
  const std::vector<Tensor> x = gru_leaves(rnn_sequence_cases()[0]);
  CHECK_THROWS_WITH(gru_sequence(x[0], x[1], x[2].slice(0, 0, 4), x[3]),
                    Catch::Contains("bias_hh must be [12]"));
}

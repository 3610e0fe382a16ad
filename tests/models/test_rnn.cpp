// LSTM and GRU layers: torch's state_dict names and shapes, float64 gradient checks of a tiny
// 2-layer bidirectional model on a ragged batch w.r.t. the input, the initial state and every
// parameter, exact zeros at padded frames, and a ragged sample equal to itself run alone.
#include <catch2/catch.hpp>

#include <cmath>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/ops.h"
#include "models/layers/rnn.h"
#include "tests/ops/op_test_util.h"

using namespace sonata;
using namespace sonata::testing;

namespace {

constexpr int64_t kSteps = 5, kBatch = 3, kInput = 3, kHidden = 4, kLayers = 2;
const std::vector<int64_t> kLengths{5, 3, 1};

RnnOptions tiny_options() {
  return {.input_size = kInput,
          .hidden_size = kHidden,
          .num_layers = kLayers,
          .bidirectional = true,
          .bias = true};
}

// The model's outputs flattened into one tensor, so one check covers them all.
Tensor all_outputs(const RnnResult& r) {
  std::vector<Tensor> parts{r.output.flatten(), r.h_n.flatten()};
  if (r.c_n.defined()) parts.push_back(r.c_n.flatten());
  return cat(parts, 0);
}

void check_module_gradients(RecurrentBase& module, bool with_cell_state) {
  module.to(DType::f64);
  const Tensor lengths = i64_tensor(kLengths, {kBatch});
  std::vector<Tensor> inputs{grad_input({kSteps, kBatch, kInput}, 101),
                             grad_input({kLayers * 2, kBatch, kHidden}, 102),
                             grad_input({kLayers * 2, kBatch, kHidden}, 103)};
  if (!with_cell_state) inputs[2].set_requires_grad(false);
  for (const Tensor& p : module.parameters()) inputs.push_back(p);
  require_gradients(
      [&](const std::vector<Tensor>& in) {
        return all_outputs(
            module.forward(in[0], lengths, in[1], with_cell_state ? in[2] : Tensor()));
      },
      inputs);
}

}  // namespace

TEST_CASE("rnn: LSTM parameters carry torch.nn.LSTM's state_dict names and shapes", "[rnn][lstm]") {
  LSTM lstm(tiny_options());
  const std::vector<std::pair<std::string, Shape>> expected{
      {"weight_ih_l0", {16, 3}},
      {"weight_hh_l0", {16, 4}},
      {"bias_ih_l0", {16}},
      {"bias_hh_l0", {16}},
      {"weight_ih_l0_reverse", {16, 3}},
      {"weight_hh_l0_reverse", {16, 4}},
      {"bias_ih_l0_reverse", {16}},
      {"bias_hh_l0_reverse", {16}},
      {"weight_ih_l1", {16, 8}},
      {"weight_hh_l1", {16, 4}},
      {"bias_ih_l1", {16}},
      {"bias_hh_l1", {16}},
      {"weight_ih_l1_reverse", {16, 8}},
      {"weight_hh_l1_reverse", {16, 4}},
      {"bias_ih_l1_reverse", {16}},
      {"bias_hh_l1_reverse", {16}},
  };
  const NamedTensors state = lstm.state_dict();
  REQUIRE(state.size() == expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    CHECK(state[i].first == expected[i].first);
    CHECK(state[i].second.shape() == expected[i].second);
    // torch's init: U(-1/sqrt(H), 1/sqrt(H)) for every parameter.
    for (double v : values_of(state[i].second)) CHECK(std::abs(v) <= 0.5);
  }
}

TEST_CASE("rnn: GRU parameters are 3H tall and bias=false registers no biases", "[rnn][gru]") {
  GRU gru({.input_size = 2, .hidden_size = 5, .num_layers = 1, .bidirectional = false});
  const NamedTensors state = gru.state_dict();
  REQUIRE(state.size() == 4);
  CHECK(state[0].first == "weight_ih_l0");
  CHECK(state[0].second.shape() == Shape{15, 2});
  CHECK(state[1].second.shape() == Shape{15, 5});
  CHECK(state[3].first == "bias_hh_l0");
  LSTM no_bias({.input_size = 2, .hidden_size = 5, .num_layers = 2, .bias = false});
  const NamedTensors weights = no_bias.state_dict();
  REQUIRE(weights.size() == 4);
  CHECK(weights[2].first == "weight_ih_l1");
  no_bias.to(DType::f64);
  const Tensor y = no_bias.forward(grad_input({4, 2, 2}, 5));
  CHECK(y.shape() == Shape{4, 2, 5});
}

TEST_CASE("rnn: LSTM gradients (float64) on a ragged bidirectional batch", "[rnn][lstm]") {
  LSTM lstm(tiny_options());
  check_module_gradients(lstm, true);
}

TEST_CASE("rnn: GRU gradients (float64) on a ragged bidirectional batch", "[rnn][gru]") {
  GRU gru(tiny_options());
  check_module_gradients(gru, false);
}

TEST_CASE("rnn: padded frames have output exactly 0 and input gradient exactly 0",
          "[rnn][lstm][gru]") {
  LSTM lstm(tiny_options());
  GRU gru(tiny_options());
  for (RecurrentBase* module :
       {static_cast<RecurrentBase*>(&lstm), static_cast<RecurrentBase*>(&gru)}) {
    module->to(DType::f64);
    const Tensor x = grad_input({kSteps, kBatch, kInput}, 201);
    const RnnResult r = module->forward(x, i64_tensor(kLengths, {kBatch}));
    REQUIRE(r.output.shape() == Shape{kSteps, kBatch, 2 * kHidden});
    all_outputs(r).backward(grad_input({all_outputs(r).numel()}, 202).detach());
    const std::vector<double> y = values_of(r.output), gx = values_of(x.grad());
    for (int64_t t = 0; t < kSteps; ++t) {
      for (int64_t n = 0; n < kBatch; ++n) {
        if (t < kLengths[size_t(n)]) continue;
        INFO("t " << t << " n " << n);
        for (int64_t k = 0; k < 2 * kHidden; ++k)
          CHECK(y[size_t(flat_index({kSteps, kBatch, 2 * kHidden}, {t, n, k}))] == 0.0);
        for (int64_t k = 0; k < kInput; ++k)
          CHECK(gx[size_t(flat_index({kSteps, kBatch, kInput}, {t, n, k}))] == 0.0);
      }
    }
  }
}

TEST_CASE("rnn: a ragged sample gives what it gives alone at its own length", "[rnn][lstm][gru]") {
  LSTM lstm(tiny_options());
  GRU gru(tiny_options());
  for (RecurrentBase* module :
       {static_cast<RecurrentBase*>(&lstm), static_cast<RecurrentBase*>(&gru)}) {
    module->to(DType::f64);
    const Tensor x = grad_input({kSteps, kBatch, kInput}, 301).detach();
    const RnnResult batched = module->forward(x, i64_tensor(kLengths, {kBatch}));
    for (int64_t n = 0; n < kBatch; ++n) {
      INFO("sample " << n);
      const int64_t length = kLengths[size_t(n)];
      const Tensor alone_input = x.slice(0, 0, length).slice(1, n, n + 1);
      const RnnResult alone = module->forward(alone_input, Tensor());
      const auto expected = values_of(alone.output);
      const auto actual = values_of(batched.output.slice(0, 0, length).slice(1, n, n + 1));
      REQUIRE(actual.size() == expected.size());
      for (size_t i = 0; i < actual.size(); ++i)
        CHECK(actual[i] == Approx(expected[i]).margin(1e-13));
      const auto h_alone = values_of(alone.h_n),
                 h_batched = values_of(batched.h_n.slice(1, n, n + 1));
      for (size_t i = 0; i < h_alone.size(); ++i)
        CHECK(h_batched[i] == Approx(h_alone[i]).margin(1e-13));
      if (alone.c_n.defined()) {
        const auto c_alone = values_of(alone.c_n),
                   c_batched = values_of(batched.c_n.slice(1, n, n + 1));
        for (size_t i = 0; i < c_alone.size(); ++i)
          CHECK(c_batched[i] == Approx(c_alone[i]).margin(1e-13));
      }
    }
  }
}

TEST_CASE("rnn: bad inputs are rejected with one clear sentence", "[rnn]") {
  LSTM lstm(tiny_options());
  CHECK_THROWS(lstm.forward(empty({5, 3, 2})));                              // wrong in
  CHECK_THROWS(lstm.forward(empty({5, 3, 3}), i64_tensor({5, 6, 1}, {3})));  // > T
  CHECK_THROWS(lstm.forward(empty({5, 3, 3}), i64_tensor({5, 1}, {2})));     // not [N]
  CHECK_THROWS(lstm.forward(empty({5, 3, 3}), Tensor(), empty({4, 3, 5})));
  CHECK_THROWS(
      lstm.forward(empty({5, 3, 3}, TensorOptions{}.with(DType::f64))));  // dtype  // bad h0
}

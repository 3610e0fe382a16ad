// DeepSpeech2's shape arithmetic, options, layer naming and ragged lengths; its numbers are
// compared with PyTorch in test_ds2_parity.cpp.
#include <catch2/catch.hpp>

#include <map>
#include <string>

#include "base/error.h"
#include "engine/ops.h"
#include "engine/random.h"
#include "models/ds2.h"

using namespace sonata;

namespace {

std::shared_ptr<Ds2> small_ds2(std::map<std::string, std::string> extra = {}) {
  std::map<std::string, std::string> values = {
      {"num-mels", "16"}, {"hidden", "8"}, {"layers", "2"}};
  for (const auto& [key, value] : extra) values[key] = value;
  manual_seed(0);
  auto model = std::dynamic_pointer_cast<Ds2>(make_model("ds2", ModelConfig(values)));
  REQUIRE(model);
  model->to(DType::f64);
  return model;
}

Tensor random_input(int64_t batch, int64_t frames) {
  manual_seed(1);
  return randn({batch, 1, frames, 16}, TensorOptions{}.with(DType::f64));
}

ModelConfig config_of(std::map<std::string, std::string> values) {
  return ModelConfig(std::move(values));
}

bool has_name(const Module& model, const std::string& name) {
  for (const auto& [n, t] : model.state_dict())
    if (n == name) return true;
  return false;
}

}  // namespace

TEST_CASE("ds2 output frames follow the conv arithmetic along time", "[models][ds2]") {
  const auto model = small_ds2();
  // conv 1: floor((L + 10 - 10 - 1) / 2) + 1; conv 2 keeps L.
  CHECK(model->output_frames(0) == 0);
  CHECK(model->output_frames(1) == 1);
  CHECK(model->output_frames(2) == 1);
  CHECK(model->output_frames(3) == 2);
  CHECK(model->output_frames(400) == 200);
  CHECK(model->output_frames(401) == 201);
}

TEST_CASE("ds2 forward gives log_probs [T', N, C] and per-sample output lengths", "[models][ds2]") {
  const auto model = small_ds2();
  const Tensor x = random_input(3, 21);
  const Ds2Output out = model->forward(x, from_vector(std::vector<int64_t>{21, 14, 0}, {3}));
  CHECK(out.output.shape() == Shape{11, 3, 29});
  CHECK(out.output_lengths.dtype() == DType::i64);
  CHECK(out.output_lengths.to_vector<int64_t>() == std::vector<int64_t>{11, 7, 0});
  // Rows are normalised: logsumexp over the classes is 0.
  const Tensor total = sum(exp(out.output), {2});
  CHECK(amax(abs(add(total, -1.0))).item() < 1e-12);
  // Without lengths every sample is full length, as Module::forward takes it.
  const Tensor full = model->forward(x);
  const Ds2Output same = model->forward(x, from_vector(std::vector<int64_t>{21, 21, 21}, {3}));
  CHECK(amax(abs(sub(full, same.output))).item() == 0.0);
}

TEST_CASE("ds2 names its layers as torch: one RNN stack, or one module per layer",
          "[models][ds2]") {
  CHECK(has_name(*small_ds2(), "rnn.weight_ih_l1_reverse"));
  CHECK(has_name(*small_ds2(), "conv.4.running_var"));
  const auto layered = small_ds2({{"seq-batch-norm", "1"}, {"rnn", "gru"}});
  CHECK(has_name(*layered, "rnns.0.rnn.weight_ih_l0_reverse"));
  CHECK_FALSE(has_name(*layered, "rnns.0.bn.weight"));  // no BatchNorm before the first layer
  CHECK(has_name(*layered, "rnns.1.bn.running_mean"));
  CHECK(has_name(*layered, "fc.weight"));
  const auto summed = small_ds2({{"merge", "sum"}});
  CHECK(has_name(*summed, "rnns.1.rnn.weight_ih_l0"));
  const NamedTensors parameters = summed->named_parameters();
  CHECK(parameters.back().first == "fc.bias");
  CHECK(parameters[parameters.size() - 2].second.shape() == Shape{29, 8});  // Linear(H, C)
  // The summed stack's second layer reads H features, not 2H.
  for (const auto& [name, t] : parameters)
    if (name == "rnns.1.rnn.weight_ih_l0") CHECK(t.shape() == Shape{32, 8});
  const auto forward_only = small_ds2({{"bidirectional", "0"}, {"vocab-size", "30"}});
  CHECK_FALSE(has_name(*forward_only, "rnn.weight_ih_l0_reverse"));
  CHECK(forward_only->forward(random_input(1, 5)).shape() == Shape{3, 1, 30});
}

TEST_CASE("ds2's RNN ends each sample at its own output length", "[models][ds2]") {
  // With length 20 the valid output frames are 0..9, whose conv features see input frames
  // up to 2 * 9 + 15 = 33. Input after that may change freely: the reverse direction starts
  // at frame 9, not at the padded end (without lengths it would carry the change back).
  const auto model = small_ds2();
  model->eval();  // running statistics, so the changed frames do not enter BatchNorm
  const Tensor x = random_input(1, 40);
  Tensor y = x.clone();
  y.slice(2, 34, 40).fill_(7.0);
  const Tensor lengths = from_vector(std::vector<int64_t>{20}, {1});
  const Tensor a = model->forward(x, lengths).output.slice(0, 0, 10);
  const Tensor b = model->forward(y, lengths).output.slice(0, 0, 10);
  CHECK(amax(abs(sub(a, b))).item() < 1e-12);
  const Tensor full_a = model->forward(x).slice(0, 0, 10);
  const Tensor full_b = model->forward(y).slice(0, 0, 10);
  CHECK(amax(abs(sub(full_a, full_b))).item() > 1e-6);
}

TEST_CASE("ds2 refuses bad options and lengths with one clear sentence", "[models][ds2]") {
  CHECK_THROWS_WITH(make_model("ds2", config_of({{"rnn", "rnn_tanh"}})),
                    Catch::Contains("--rnn expects one of lstm, gru, got 'rnn_tanh'"));
  CHECK_THROWS_WITH(make_model("ds2", config_of({{"merge", "sum"}, {"bidirectional", "0"}})),
                    Catch::Contains("--merge sum needs a bidirectional RNN"));
  CHECK_THROWS_WITH(make_model("ds2", config_of({{"num-classes", "29"}, {"vocab-size", "30"}})),
                    Catch::Contains("disagree"));
  CHECK_THROWS_WITH(make_model("ds2", config_of({{"width", "2"}})),
                    Catch::Contains("model ds2 has no option --width"));
  const auto model = small_ds2();
  CHECK_THROWS_WITH(
      model->forward(random_input(2, 9), from_vector(std::vector<int64_t>{9, 10}, {2})),
      Catch::Contains("input length 10 of sample 1 is outside [0, 9]"));
  CHECK_THROWS_WITH(model->forward(randn({2, 1, 9, 80}, TensorOptions{}.with(DType::f64))),
                    Catch::Contains("expected input [N, 1, T, 16]"));
}

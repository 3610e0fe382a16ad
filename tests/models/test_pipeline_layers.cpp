// The models' layer sequences: run in order they must equal forward() exactly (the same ops
// on the same values), cut anywhere into two stages they must give the same values and
// gradients, and their modules must carry the whole model's state_dict names in its order,
// so that stages keep checkpoint names.
#include <catch2/catch.hpp>

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "base/error.h"
#include "comm/pipeline/partition.h"
#include "engine/deferred_init.h"
#include "engine/nn/layer_sequence.h"
#include "engine/ops.h"
#include "engine/random.h"
#include "models/ds2.h"
#include "models/vgg.h"

using namespace sonata;

namespace {

double max_difference(const Tensor& a, const Tensor& b) {
  REQUIRE(a.shape() == b.shape());
  return amax(abs(sub(a, b))).item();
}

// The layers' state, entry for entry the model's: same names, order and tensors.
void check_same_state(const Module& model, const LayerSequence& layers) {
  const NamedTensors ours = layer_state_dict(layers, {0, layers.size()});
  const NamedTensors theirs = model.state_dict();
  REQUIRE(ours.size() == theirs.size());
  for (size_t i = 0; i < ours.size(); ++i) {
    INFO(theirs[i].first);
    CHECK(ours[i].first == theirs[i].first);
    CHECK(ours[i].second.same(theirs[i].second));
  }
  CHECK(layer_parameters(layers, {0, layers.size()}).size() == model.named_parameters().size());
}

std::shared_ptr<Vgg> narrow_vgg(bool channels_last = false, double width = 1.0 / 16,
                                int64_t depth = 19) {
  manual_seed(3);
  VggOptions options;
  options.depth = depth;
  options.num_classes = 5;
  options.in_channels = 2;
  options.width = width;
  options.dropout = 0;
  options.channels_last = channels_last;
  auto model = std::make_shared<Vgg>(options);
  model->to(DType::f64);
  return model;
}

std::shared_ptr<Ds2> narrow_ds2(std::map<std::string, std::string> extra = {}) {
  std::map<std::string, std::string> values = {
      {"num-mels", "16"}, {"hidden", "8"}, {"layers", "2"}, {"conv-channels", "4"}};
  for (const auto& [key, value] : extra) values[key] = value;
  manual_seed(4);
  auto model = std::dynamic_pointer_cast<Ds2>(make_ds2(ModelConfig(values)));
  REQUIRE(model);
  model->to(DType::f64);
  return model;
}

// What a training step reads back: the output, its lengths, and the gradients of a fixed
// weighting of the output with respect to the input and to every parameter.
struct StepResult {
  Tensor output, lengths, input_grad;
  std::vector<Tensor> parameter_grads;
};

Tensor weighted_sum(const Tensor& output) {
  manual_seed(7);
  return sum(mul(output, randn(output.shape(), TensorOptions{}.with(output.dtype()))));
}

StepResult read_back(Module& model, const LayerValue& out, const Tensor& input_grad) {
  StepResult result{out.x, out.lengths, input_grad, {}};
  for (const auto& [name, parameter] : model.named_parameters())
    result.parameter_grads.push_back(parameter.grad());
  return result;
}

// The model's own forward as one step.
StepResult whole_step(Module& model, const std::function<LayerValue(const LayerValue&)>& forward,
                      const LayerValue& in) {
  model.zero_grad();
  Tensor x = in.x.detach().set_requires_grad(true);
  const LayerValue out = forward({x, in.lengths});
  weighted_sum(out.x).backward();
  return read_back(model, out, x.grad());
}

// Layers [0, cut) and [cut, n) as two pipeline stages: the second starts from a detached
// copy of the first's output, and its gradient there is sent back through the first.
StepResult staged_step(Module& model, const LayerSequence& layers, size_t cut,
                       const LayerValue& in) {
  model.zero_grad();
  Tensor x = in.x.detach().set_requires_grad(true);
  const LayerValue first = run_layers(layers, {0, cut}, {x, in.lengths});
  Tensor boundary = first.x.detach().set_requires_grad(true);
  const LayerValue out = run_layers(layers, {cut, layers.size()}, {boundary, first.lengths});
  weighted_sum(out.x).backward();
  if (cut > 0) first.x.backward(boundary.grad());
  return read_back(model, out, cut > 0 ? x.grad() : boundary.grad());
}

void check_every_cut(Module& model, const LayerSequence& layers,
                     const std::function<LayerValue(const LayerValue&)>& forward,
                     const LayerValue& in) {
  const StepResult expected = whole_step(model, forward, in);
  REQUIRE(expected.input_grad.defined());
  for (size_t cut = 0; cut <= layers.size(); ++cut) {
    INFO("cut before layer " << cut << " of " << layers.size());
    const StepResult staged = staged_step(model, layers, cut, in);
    CHECK(max_difference(staged.output, expected.output) == 0.0);
    REQUIRE(staged.lengths.defined() == expected.lengths.defined());
    if (expected.lengths.defined())
      CHECK(staged.lengths.to_vector<int64_t>() == expected.lengths.to_vector<int64_t>());
    REQUIRE(staged.input_grad.defined());
    CHECK(max_difference(staged.input_grad, expected.input_grad) == 0.0);
    REQUIRE(staged.parameter_grads.size() == expected.parameter_grads.size());
    for (size_t i = 0; i < staged.parameter_grads.size(); ++i) {
      INFO("parameter " << model.named_parameters()[i].first);
      REQUIRE(staged.parameter_grads[i].defined());
      CHECK(max_difference(staged.parameter_grads[i], expected.parameter_grads[i]) == 0.0);
    }
  }
}

}  // namespace

TEST_CASE("vgg19_bn's pipeline layers compose to its forward", "[models][pipeline]") {
  for (const bool channels_last : {false, true}) {
    INFO("channels_last " << channels_last);
    const auto model = narrow_vgg(channels_last);
    const LayerSequence layers = model->pipeline_layers();
    // 16 conv blocks, 5 max pools, the average pool and 7 classifier modules.
    REQUIRE(layers.size() == 29);
    CHECK(layers[0].name == "features.0-2");
    CHECK(layers[2].name == "features.6");  // the first max pool
    CHECK(layers[21].name == "avgpool");
    CHECK(layers[28].name == "classifier.6");
    check_same_state(*model, layers);

    manual_seed(5);
    const Tensor x = randn({3, 2, 32, 32}, TensorOptions{}.with(DType::f64));
    for (const bool training : {true, false}) {
      model->train(training);
      const Tensor expected = model->forward(x);
      const LayerValue out = run_layers(layers, {0, layers.size()}, {x, Tensor()});
      CHECK(max_difference(out.x, expected) == 0.0);
      CHECK_FALSE(out.lengths.defined());
    }
  }
  CHECK_THROWS_WITH(narrow_vgg()->pipeline_layers()[0].forward({zeros({1, 3, 8, 8}), Tensor()}),
                    Catch::Contains("expected input [N, 2, H, W]"));
}

TEST_CASE("ds2's pipeline layers compose to forward(x, lengths)", "[models][pipeline]") {
  const std::vector<std::map<std::string, std::string>> variants = {
      {}, {{"rnn", "gru"}, {"seq-batch-norm", "1"}}, {{"merge", "sum"}}};
  const std::vector<std::vector<std::string>> names = {
      {"conv.0-2", "conv.3-5", "rnn", "fc"},
      {"conv.0-2", "conv.3-5", "rnns.0", "rnns.1", "fc"},
      {"conv.0-2", "conv.3-5", "rnns.0", "rnns.1", "fc"}};
  for (size_t v = 0; v < variants.size(); ++v) {
    INFO("variant " << v);
    const auto model = narrow_ds2(variants[v]);
    const LayerSequence layers = model->pipeline_layers();
    REQUIRE(layers.size() == names[v].size());
    for (size_t i = 0; i < layers.size(); ++i) CHECK(layers[i].name == names[v][i]);
    check_same_state(*model, layers);

    manual_seed(6);
    const Tensor x = randn({3, 1, 21, 16}, TensorOptions{}.with(DType::f64));
    const Tensor lengths = from_vector(std::vector<int64_t>{21, 14, 5}, {3});
    const Ds2Output expected = model->forward(x, lengths);
    const LayerValue out = run_layers(layers, {0, layers.size()}, {x, lengths});
    CHECK(max_difference(out.x, expected.output) == 0.0);
    CHECK(out.lengths.to_vector<int64_t>() == expected.output_lengths.to_vector<int64_t>());
    // Without lengths every sample is full length, as in forward(x).
    const LayerValue full = run_layers(layers, {0, layers.size()}, {x, Tensor()});
    CHECK(max_difference(full.x, model->forward(x)) == 0.0);
  }
}

TEST_CASE("pipeline layer bytes count each layer's parameters", "[models][pipeline]") {
  const auto model = narrow_ds2();
  const LayerSequence layers = model->pipeline_layers();
  const std::vector<double> bytes = layer_parameter_bytes(layers);
  // conv.0: 4 x 1 x 11 x 41 weights + 4 biases, BatchNorm 4 + 4; f64.
  CHECK(bytes[0] == double((4 * 11 * 41 + 4 + 8) * 8));
  double total = 0;
  for (double b : bytes) total += b;
  CHECK(total == double(model->parameter_count() * 8));
}

TEST_CASE("every cut of ds2's layers into two stages gives its forward and gradients",
          "[models][pipeline]") {
  const std::vector<std::map<std::string, std::string>> variants = {
      {},  // one bidirectional LSTM stack, directions concatenated
      {{"seq-batch-norm", "1"}, {"merge", "sum"}},
      {{"rnn", "gru"}, {"bidirectional", "0"}}};
  for (size_t v = 0; v < variants.size(); ++v) {
    INFO("variant " << v);
    const auto model = narrow_ds2(variants[v]);
    manual_seed(8);
    const Tensor x = randn({3, 1, 21, 16}, TensorOptions{}.with(DType::f64));
    const Tensor lengths = from_vector(std::vector<int64_t>{21, 14, 5}, {3});
    check_every_cut(*model, model->layers(),
                    [&](const LayerValue& in) {
                      const Ds2Output out = model->forward(in.x, in.lengths);
                      return LayerValue{out.output, out.output_lengths};
                    },
                    {x, lengths});
    // forward_logits is the same up to the last log_softmax.
    const Ds2Output logits = model->forward_logits(x, lengths);
    const Ds2Output log_probs = model->forward(x, lengths);
    CHECK(max_difference(log_softmax(logits.output, 2), log_probs.output) == 0.0);
    CHECK(logits.output_lengths.to_vector<int64_t>() ==
          log_probs.output_lengths.to_vector<int64_t>());
  }
}

TEST_CASE("every cut of vgg19_bn's layers into two stages gives its forward and gradients",
          "[models][pipeline]") {
  for (const bool channels_last : {false, true}) {
    INFO("channels_last " << channels_last);
    const auto model = narrow_vgg(channels_last, 1.0 / 8);
    manual_seed(9);
    // 32 x 32 is the smallest image the five max pools take.
    const Tensor x = randn({2, 2, 32, 32}, TensorOptions{}.with(DType::f64));
    check_every_cut(*model, model->layers(),
                    [&](const LayerValue& in) {
                      return LayerValue{model->forward(in.x), Tensor()};
                    },
                    {x, Tensor()});
  }
}

TEST_CASE("vgg16_bn's layers: every cut into two stages gives its forward and gradients",
          "[models][pipeline]") {
  const auto model = narrow_vgg(false, 1.0 / 8, 16);
  const LayerSequence layers = model->pipeline_layers();
  // 13 conv blocks, 5 max pools, the average pool and 7 classifier modules.
  REQUIRE(layers.size() == 26);
  CHECK(layers[0].name == "features.0-2");
  CHECK(layers[2].name == "features.6");   // the first max pool
  CHECK(layers[9].name == "features.23");  // the third, after three convs (four in vgg19_bn)
  CHECK(layers[18].name == "avgpool");
  CHECK(layers[25].name == "classifier.6");
  check_same_state(*model, layers);
  manual_seed(9);
  const Tensor x = randn({2, 2, 32, 32}, TensorOptions{}.with(DType::f64));
  check_every_cut(*model, model->layers(),
                  [&](const LayerValue& in) {
                    return LayerValue{model->forward(in.x), Tensor()};
                  },
                  {x, Tensor()});
}

TEST_CASE("a Linear cut into row pieces gives the whole layer's values and gradients",
          "[models][pipeline]") {
  const auto model = narrow_vgg();
  model->train();
  const LayerSequence layers = model->pipeline_layers();
  size_t at = layers.size();
  for (size_t i = 0; i < layers.size(); ++i)
    if (layers[i].name == "classifier.0") at = i;
  REQUIRE(at < layers.size());
  const ModelLayer& whole = layers[at];
  REQUIRE(whole.rows > 0);
  const int64_t rows = whole.rows, a = rows / 3, b = 2 * rows / 3;
  LayerSequence cut(layers.begin(), layers.begin() + std::ptrdiff_t(at));
  for (const auto& [begin, end] :
       std::vector<std::pair<int64_t, int64_t>>{{0, a}, {a, b}, {b, rows}})
    cut.push_back(row_piece(whole, begin, end));
  cut.insert(cut.end(), layers.begin() + std::ptrdiff_t(at) + 1, layers.end());
  CHECK(cut[at].name == str("classifier.0[0:", a, "]"));
  CHECK(cut[at + 1].shard == RowShard{a, b, rows});
  // The pieces are the whole layer's rows, under its names.
  const NamedTensors whole_state = whole.modules[0].second->state_dict();
  const NamedTensors middle = layer_state_dict(cut, {at + 1, at + 2});
  REQUIRE(middle.size() == whole_state.size());
  for (size_t i = 0; i < middle.size(); ++i) {
    CHECK(middle[i].first == "classifier.0." + whole_state[i].first);
    CHECK(max_difference(middle[i].second, whole_state[i].second.slice(0, a, b)) == 0.0);
    CHECK_FALSE(middle[i].second.same(whole_state[i].second));
  }

  manual_seed(5);
  const Tensor x = randn({3, 2, 32, 32}, TensorOptions{}.with(DType::f64));
  const StepResult expected = whole_step(*model,
                                         [&](const LayerValue& in) {
                                           return LayerValue{model->forward(in.x), Tensor()};
                                         },
                                         {x, Tensor()});
  // A stage boundary before, between and after the pieces: what crosses is one tensor.
  for (size_t boundary = at; boundary <= at + 3; ++boundary) {
    INFO("stage boundary before layer " << boundary << " (the pieces are " << at << "-" << at + 2
                                        << ")");
    for (const ModelLayer& layer : cut)
      for (const auto& [prefix, module] : layer.modules) module->zero_grad();
    Tensor input = x.detach().set_requires_grad(true);
    const LayerValue first = run_layers(cut, {0, boundary}, {input, Tensor()});
    Tensor sent = first.x.detach().set_requires_grad(true);
    const LayerValue out = run_layers(cut, {boundary, cut.size()}, {sent, Tensor()});
    weighted_sum(out.x).backward();
    first.x.backward(sent.grad());
    CHECK(max_difference(out.x, expected.output) < 1e-12);
    CHECK(max_difference(input.grad(), expected.input_grad) < 1e-12);
    // Every parameter's gradient: the pieces' concatenated where the layer is cut.
    std::map<std::string, std::vector<Tensor>> grads;
    for (const auto& [name, param] : layer_parameters(cut, {0, cut.size()}))
      grads[name].push_back(param.grad());
    const NamedTensors params = model->named_parameters();
    for (size_t i = 0; i < params.size(); ++i) {
      INFO(params[i].first);
      const std::vector<Tensor>& of_name = grads.at(params[i].first);
      const Tensor grad = of_name.size() == 1 ? of_name[0] : cat(of_name, 0);
      CHECK(max_difference(grad, expected.parameter_grads[i]) < 1e-12);
    }
  }
  CHECK_THROWS_WITH(row_piece(whole, 0, rows + 1),
                    Catch::Contains("classifier.0") && Catch::Contains("lie outside"));
  CHECK_THROWS_WITH(row_piece(layers[at - 1], 0, 1), Catch::Contains("cannot be cut into rows"));
}

TEST_CASE("timing the layers of a model built deferred makes one layer at a time",
          "[models][pipeline][deferred]") {
  const auto eager = narrow_vgg();
  std::shared_ptr<Vgg> deferred;
  {
    DeferredInitScope scope;
    deferred = narrow_vgg();
  }
  // Each layer, when it runs, sees only its own tensors made.
  LayerSequence layers = deferred->pipeline_layers();
  const NamedTensors state = deferred->state_dict();
  int64_t made_elsewhere = 0;
  for (size_t i = 0; i < layers.size(); ++i) {
    std::set<const TensorImpl*> own;
    for (const auto& [name, tensor] : layer_state_dict(layers, {i, i + 1}))
      own.insert(tensor.impl_ptr().get());
    layers[i].forward = [&, own, forward = layers[i].forward](const LayerValue& in) {
      for (const auto& [name, tensor] : state)
        if (!is_deferred(tensor) && !own.count(tensor.impl_ptr().get())) ++made_elsewhere;
      return forward(in);
    };
  }
  manual_seed(5);
  const Tensor x = randn({2, 2, 32, 32}, TensorOptions{}.with(DType::f64));
  const std::vector<double> seconds = measure_layer_times(layers, {x, Tensor()});
  CHECK(seconds.size() == layers.size());
  CHECK(made_elsewhere == 0);
  // Deferred again afterwards, the recipes untouched: made now, they are the eager model's
  // (BatchNorm's statistics included, which the timing pass updated while they were made).
  std::vector<Tensor> tensors;
  for (const auto& [name, tensor] : deferred->state_dict()) {
    INFO(name);
    CHECK(is_deferred(tensor));
    CHECK_FALSE(tensor.grad().defined());
    tensors.push_back(tensor);
  }
  materialise(tensors);
  const NamedTensors reference = eager->state_dict();
  for (size_t i = 0; i < tensors.size(); ++i) {
    INFO(reference[i].first);
    CHECK(tensors[i].to(DType::f64).to_vector<double>() ==
          reference[i].second.to(DType::f64).to_vector<double>());
  }
}

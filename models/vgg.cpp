#include "models/vgg.h"

#include <cmath>

#include "base/error.h"
#include "engine/ops/memory_format.h"
#include "models/layers/batch_norm.h"
#include "models/layers/conv2d.h"
#include "models/layers/conv_batch_norm.h"
#include "models/layers/init.h"
#include "models/layers/linear.h"
#include "models/layers/simple.h"

namespace sonata {
namespace {

// torchvision's configurations: channel counts, 0 marks a 2x2 max pool. "D" (VGG16) has one
// conv fewer than "E" (VGG19) in each of the last three stages.
const std::vector<int64_t> kVgg16 = {64, 64,  0,   128, 128, 0,   256, 256, 256,
                                     0,  512, 512, 512, 0,   512, 512, 512, 0};
const std::vector<int64_t> kVgg19 = {64,  64,  0,   128, 128, 0,   256, 256, 256, 256, 0,
                                     512, 512, 512, 512, 0,   512, 512, 512, 512, 0};

const std::vector<int64_t>& configuration(int64_t depth) {
  SONATA_CHECK(depth == 16 || depth == 19, "vgg: depth must be 16 or 19, got ", depth);
  return depth == 16 ? kVgg16 : kVgg19;
}

int64_t scaled(int64_t channels, double width) {
  return std::max<int64_t>(1, int64_t(std::lround(double(channels) * width)));
}

}  // namespace

Vgg::Vgg(const VggOptions& options) : options_(options) {
  const std::vector<int64_t>& entries = configuration(options.depth);
  SONATA_CHECK(options.num_classes > 0, name(), ": --num-classes must be positive");
  SONATA_CHECK(options.in_channels > 0, name(), ": --in-channels must be positive");
  SONATA_CHECK(options.width > 0, name(), ": --width must be positive");
  SONATA_CHECK(options.dropout >= 0 && options.dropout < 1, name(),
               ": --dropout must be in [0, 1)");
  features_ = register_module("features", std::make_shared<Sequential>());
  int64_t channels = options.in_channels;
  for (int64_t entry : entries) {
    if (entry == 0) {
      features_->push_back(
          std::make_shared<MaxPool2d>(std::array<int64_t, 2>{2, 2}, std::array<int64_t, 2>{2, 2}));
      continue;
    }
    const int64_t out = scaled(entry, options.width);
    auto conv = std::make_shared<Conv2d>(channels, out, std::array<int64_t, 2>{3, 3},
                                         Conv2dParams{{1, 1}, {1, 1}, {1, 1}});
    // torchvision: kaiming_normal_(fan_out, relu) for conv weights, zero bias.
    kaiming_normal_fan_out_(conv->weight());
    constant_init_(conv->bias(), 0.0);
    features_->push_back(conv);
    features_->push_back(std::make_shared<BatchNorm>(out));
    features_->push_back(std::make_shared<ReLU>());
    channels = out;
  }
  avgpool_ =
      register_module("avgpool", std::make_shared<AdaptiveAvgPool2d>(std::array<int64_t, 2>{7, 7}));
  const int64_t hidden = scaled(4096, options.width);
  classifier_ = register_module("classifier", std::make_shared<Sequential>());
  auto add_linear = [&](int64_t in, int64_t out) {
    auto linear = std::make_shared<Linear>(in, out);
    normal_init_(linear->weight(), 0.0, 0.01);
    constant_init_(linear->bias(), 0.0);
    classifier_->push_back(linear);
  };
  add_linear(channels * 7 * 7, hidden);
  classifier_->push_back(std::make_shared<ReLU>());
  classifier_->push_back(std::make_shared<Dropout>(options.dropout));
  add_linear(hidden, hidden);
  classifier_->push_back(std::make_shared<ReLU>());
  classifier_->push_back(std::make_shared<Dropout>(options.dropout));
  add_linear(hidden, options.num_classes);
  layers_ = make_layers();
}

std::string Vgg::name() const {
  return str("vgg", options_.depth, "_bn");
}

Tensor Vgg::forward(const Tensor& x) {
  return run_layers(layers_, {0, layers_.size()}, {x, Tensor()}).x;
}

LayerSequence Vgg::make_layers() {
  LayerSequence layers;
  const size_t count = features_->size();
  const auto& features = features_->children();
  for (size_t i = 0; i < count;) {
    auto* bn = i + 2 < count ? dynamic_cast<BatchNorm*>(features[i + 1].second.get()) : nullptr;
    const bool block = bn && dynamic_cast<ReLU*>(features[i + 2].second.get());
    const size_t size = block ? 3 : 1;
    ModelLayer layer;
    layer.name = block ? str("features.", i, "-", i + 2) : str("features.", i);
    for (size_t k = i; k < i + size; ++k)
      layer.modules.emplace_back("features." + features[k].first, features[k].second);
    Module* first = features[i].second.get();
    // The input checks and the channels-last conversion open the first layer.
    const bool opens = i == 0;
    layer.forward = [this, first, bn, block, opens](const LayerValue& in) {
      Tensor x = in.x;
      if (opens) {
        SONATA_CHECK(x.dim() == 4 && x.shape()[1] == options_.in_channels, name(),
                     ": expected input [N, ", options_.in_channels, ", H, W], got ",
                     shape_str(x.shape()));
        if (options_.channels_last) x = to_channels_last(x);
      }
      if (auto* conv = block ? dynamic_cast<Conv2d*>(first) : nullptr)
        return LayerValue{conv_batch_norm_relu(*conv, *bn, x), in.lengths};
      x = first->forward(x);
      if (block) x = bn->forward_relu(x);
      return LayerValue{x, in.lengths};
    };
    layers.push_back(std::move(layer));
    i += size;
  }
  Module* avgpool = avgpool_.get();
  layers.push_back(
      module_layer("avgpool", {{"avgpool", avgpool_}}, [avgpool](const LayerValue& in) {
        return LayerValue{avgpool->forward(in.x).flatten(1), in.lengths};
      }));
  // The Linears may be cut into row pieces: classifier.0 alone holds about 74 % of the
  // parameters, more than a stage's share once there are two stages.
  for (const auto& [name, child] : classifier_->children()) {
    if (auto linear = std::dynamic_pointer_cast<Linear>(child)) {
      layers.push_back(linear_layer("classifier." + name, linear));
      continue;
    }
    Module* module = child.get();
    layers.push_back(module_layer("classifier." + name, {{"classifier." + name, child}},
                                  [module](const LayerValue& in) {
                                    return LayerValue{module->forward(in.x), in.lengths};
                                  }));
  }
  return layers;
}

namespace {

std::shared_ptr<Module> make_vgg(const ModelConfig& config, int64_t depth) {
  VggOptions options;
  options.depth = depth;
  config.check_keys(str("vgg", depth, "_bn"),
                    {"num-classes", "in-channels", "width", "dropout", "channels-last"});
  options.num_classes = config.get_int("num-classes", options.num_classes);
  options.in_channels = config.get_int("in-channels", options.in_channels);
  options.width = config.get_double("width", options.width);
  options.dropout = config.get_double("dropout", options.dropout);
  options.channels_last =
      config.get_choice("channels-last", options.channels_last ? "true" : "false",
                        {"false", "true"}) == "true";
  return std::make_shared<Vgg>(options);
}

}  // namespace

std::shared_ptr<Module> make_vgg19_bn(const ModelConfig& config) {
  return make_vgg(config, 19);
}

std::shared_ptr<Module> make_vgg16_bn(const ModelConfig& config) {
  return make_vgg(config, 16);
}

std::vector<ModelOption> vgg_model_options() {
  const VggOptions vgg;
  return {{"width", str("channel multiplier; ", vgg.width)},
          {"dropout", str(vgg.dropout)},
          {"in-channels", str(vgg.in_channels)},
          {"channels-last", str("true | false; ", vgg.channels_last ? "true" : "false")}};
}

}  // namespace sonata

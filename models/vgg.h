#pragma once
// torchvision's VGG with batch norm: VGG19_BN (configuration "E": 16 conv layers) or VGG16_BN
// ("D": 13 conv layers), each conv 3x3 with BN and ReLU, in five stages split by 2x2 max
// pooling, then AdaptiveAvgPool2d(7, 7) and a 4096-4096-num_classes classifier with dropout.
// State-dict names match torchvision's, so its ImageNet weights load unchanged.
#include <memory>
#include <string>
#include <vector>

#include "engine/nn/layer_sequence.h"
#include "engine/nn/module.h"
#include "models/model_family.h"
#include "models/registry.h"

namespace sonata {

struct VggOptions {
  int64_t depth = 19;  // weight layers: 19 (configuration "E") or 16 ("D")
  int64_t num_classes = 1000;
  int64_t in_channels = 3;
  double width = 1.0;  // channel and hidden-size multiplier, for small CPU runs
  double dropout = 0.5;
  // Runs the convolutions channels-last (NHWC): the input is converted once and the layout
  // flows through conv, BN and ReLU (engine/ops/memory_format.h). Parameters are unchanged.
  bool channels_last = false;
};

// A model of the image-classifier family (models/model_family.h).
class Vgg : public ImageClassifier {
 public:
  explicit Vgg(const VggOptions& options);
  // Runs every layer of layers().
  Tensor forward(const Tensor& x) override;
  const VggOptions& options() const { return options_; }
  // The model as its ordered layers: each conv with its BN and ReLU ("features.0-2", BN and
  // ReLU fused in one op; the first layer also checks the input and converts it to
  // channels-last when asked), each max pool, the average pool with the flatten
  // ("avgpool"), then each classifier module. A pipeline stage runs a range of them. They
  // refer to this model.
  const LayerSequence& layers() const override { return layers_; }
  // "vgg19_bn" | "vgg16_bn": the registry's name, for messages.
  std::string name() const;

 private:
  LayerSequence make_layers();

  VggOptions options_;
  std::shared_ptr<Sequential> features_;
  std::shared_ptr<Module> avgpool_;
  std::shared_ptr<Sequential> classifier_;
  LayerSequence layers_;  // built last, over the modules above
};

// Options from the registry's strings: num-classes, in-channels, width, dropout,
// channels-last (true | false).
std::shared_ptr<Module> make_vgg19_bn(const ModelConfig& config);
std::shared_ptr<Module> make_vgg16_bn(const ModelConfig& config);
// The options a user sets (the task sets num-classes), with VggOptions' defaults, for the
// registry's rows.
std::vector<ModelOption> vgg_model_options();

}  // namespace sonata

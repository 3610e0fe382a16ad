#pragma once
// A model as its ordered sequence of layers. Each layer is a callable over the value that
// flows between layers (the activation and, for ragged batches such as DS2's, each sample's
// valid length) plus the modules it runs, named as in the whole model's state_dict, so that
// a range of layers keeps the full model's names. Running every layer in order is the
// model's forward; a pipeline stage runs a range of them (Caffe's Net::ForwardFromTo).
//
// The layers refer to the model's modules (models expose them, e.g. Vgg::layers()): keep
// the model alive while its layers are in use. Lives in engine/nn so that models/ describe
// themselves without knowing about comm/.
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/nn/module.h"

namespace sonata {

// What one layer hands the next.
struct LayerValue {
  Tensor x;        // the activation
  Tensor lengths;  // optional: i64 CPU [N], each sample's valid length along the time axis
};

using NamedModules = std::vector<std::pair<std::string, std::shared_ptr<Module>>>;

struct ModelLayer {
  std::string name;      // for reports: "features.0-2", "rnn", "classifier.0"
  NamedModules modules;  // what it runs, under their prefixes in the whole model
  std::function<LayerValue(const LayerValue&)> forward;
};

using LayerSequence = std::vector<ModelLayer>;

// Layers [begin, end) of a model's sequence.
struct LayerRange {
  size_t begin = 0, end = 0;
  size_t size() const { return end - begin; }
  bool operator==(const LayerRange&) const = default;
};

// Parameters, buffers and the state dict (parameters then buffers of each module, depth
// first, as Module::state_dict) of the layers in `range`, named as in the whole model.
NamedTensors layer_parameters(const LayerSequence& layers, LayerRange range);
NamedTensors layer_state_dict(const LayerSequence& layers, LayerRange range);
// Bytes of the layers' parameters, one entry per layer (a balance cost).
std::vector<double> layer_parameter_bytes(const LayerSequence& layers);

// The layers in `range` applied in order.
LayerValue run_layers(const LayerSequence& layers, LayerRange range, LayerValue value);

}  // namespace sonata

#pragma once
// A model's top-level sequence of layers, as pipeline parallelism cuts it into stages. Each
// layer is a callable over the value that flows between layers (the activation and, for
// ragged batches such as DS2's, each sample's valid length) plus the modules it runs, named
// as in the whole model's state_dict, so that a stage's parameters keep the full model's
// names. Running every layer in order equals the model's forward exactly.
//
// The layers refer to the model's modules (models expose them, e.g. Vgg::pipeline_layers()):
// keep the model alive while its layers are in use. This header only declares data, so that
// models/ can build layers without linking comm/.
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/nn/module.h"

namespace sonata {

// What one layer hands the next.
struct PipeValue {
  Tensor x;        // the activation
  Tensor lengths;  // optional: i64 CPU [N], each sample's valid length along the time axis
};

using NamedModules = std::vector<std::pair<std::string, std::shared_ptr<Module>>>;

struct PipelineLayer {
  std::string name;      // for reports: "features.0-2", "rnn", "classifier.0"
  NamedModules modules;  // what it runs, under their prefixes in the whole model
  std::function<PipeValue(const PipeValue&)> forward;
};

using PipelineLayers = std::vector<PipelineLayer>;

}  // namespace sonata

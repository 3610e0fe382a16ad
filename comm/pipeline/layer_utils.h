#pragma once
// What a run of pipeline layers holds and does: their parameters and state under the whole
// model's names, and their composition.
#include <cstddef>

#include "comm/pipeline/pipeline_layer.h"

namespace sonata {

// Layers [begin, end) of a model's sequence.
struct LayerRange {
  size_t begin = 0, end = 0;
  size_t size() const { return end - begin; }
  bool operator==(const LayerRange&) const = default;
};

// Parameters, buffers and the state dict (parameters then buffers of each module, depth
// first, as Module::state_dict) of the layers in `range`, named as in the whole model.
NamedTensors layer_parameters(const PipelineLayers& layers, LayerRange range);
NamedTensors layer_state_dict(const PipelineLayers& layers, LayerRange range);
// Bytes of the layers' parameters, one entry per layer (a balance cost).
std::vector<double> layer_parameter_bytes(const PipelineLayers& layers);

// The layers in `range` applied in order.
PipeValue run_layers(const PipelineLayers& layers, LayerRange range, PipeValue value);

}  // namespace sonata

#include "engine/nn/layer_sequence.h"

#include "base/error.h"

namespace sonata {
namespace {

void check_range(const LayerSequence& layers, LayerRange range) {
  SONATA_CHECK(range.begin <= range.end && range.end <= layers.size(), "layers [", range.begin,
               ", ", range.end, ") lie outside the model's ", layers.size(), " layers");
}

// The tensors `of_module` gives for each module of the layers in `range`, named as in the
// whole model.
template <typename OfModule>
NamedTensors collect(const LayerSequence& layers, LayerRange range, OfModule&& of_module) {
  check_range(layers, range);
  NamedTensors out;
  for (size_t i = range.begin; i < range.end; ++i)
    for (const auto& [prefix, module] : layers[i].modules)
      for (const auto& [name, tensor] : of_module(*module))
        out.emplace_back(prefix + "." + name, tensor);
  return out;
}

}  // namespace

NamedTensors layer_parameters(const LayerSequence& layers, LayerRange range) {
  return collect(layers, range, [](const Module& module) { return module.named_parameters(); });
}

NamedTensors layer_state_dict(const LayerSequence& layers, LayerRange range) {
  return collect(layers, range, [](const Module& module) { return module.state_dict(); });
}

std::vector<double> layer_parameter_bytes(const LayerSequence& layers) {
  std::vector<double> bytes;
  for (size_t i = 0; i < layers.size(); ++i) {
    double total = 0;
    for (const auto& [name, tensor] : layer_parameters(layers, {i, i + 1}))
      total += double(tensor.numel()) * double(dtype_size(tensor.dtype()));
    bytes.push_back(total);
  }
  return bytes;
}

LayerValue run_layers(const LayerSequence& layers, LayerRange range, LayerValue value) {
  check_range(layers, range);
  for (size_t i = range.begin; i < range.end; ++i) value = layers[i].forward(value);
  return value;
}

}  // namespace sonata

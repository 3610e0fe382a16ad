#include "engine/nn/layer_sequence.h"

#include "base/error.h"

namespace sonata {
namespace {

void check_range(const LayerSequence& layers, LayerRange range) {
  SONATA_CHECK(range.begin <= range.end && range.end <= layers.size(), "layers [",
               range.begin, ", ", range.end, ") lie outside the model's ", layers.size(),
               " layers");
}

void append_prefixed(const std::string& prefix, const NamedTensors& tensors, NamedTensors& out) {
  for (const auto& [name, tensor] : tensors) out.emplace_back(prefix + "." + name, tensor);
}

}  // namespace

NamedTensors layer_parameters(const LayerSequence& layers, LayerRange range) {
  check_range(layers, range);
  NamedTensors out;
  for (size_t i = range.begin; i < range.end; ++i)
    for (const auto& [prefix, module] : layers[i].modules)
      append_prefixed(prefix, module->named_parameters(), out);
  return out;
}

NamedTensors layer_state_dict(const LayerSequence& layers, LayerRange range) {
  check_range(layers, range);
  NamedTensors out;
  for (size_t i = range.begin; i < range.end; ++i)
    for (const auto& [prefix, module] : layers[i].modules)
      append_prefixed(prefix, module->state_dict(), out);
  return out;
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

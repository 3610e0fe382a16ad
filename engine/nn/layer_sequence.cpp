#include "engine/nn/layer_sequence.h"

#include "base/error.h"
#include "engine/ops.h"

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

ModelLayer module_layer(std::string name, NamedModules modules,
                        std::function<LayerValue(const LayerValue&)> forward) {
  ModelLayer layer;
  layer.name = std::move(name);
  layer.modules = std::move(modules);
  layer.forward = std::move(forward);
  return layer;
}

ModelLayer row_piece(const ModelLayer& layer, int64_t begin, int64_t end) {
  SONATA_CHECK(layer.rows > 0 && layer.piece, "layer ", layer.name, " cannot be cut into rows");
  SONATA_CHECK(0 <= begin && begin < end && end <= layer.rows, "layer ", layer.name, ": rows [",
               begin, ", ", end, ") lie outside its ", layer.rows);
  ModelLayer piece = layer.piece(begin, end);
  piece.name = str(layer.name, "[", begin, ":", end, "]");
  piece.rows = 0;
  piece.piece = nullptr;
  piece.shard = {begin, end, layer.rows};
  piece.whole = layer.modules;
  return piece;
}

LayerValue run_row_piece(Module& piece, int64_t in_features, RowShard shard, const LayerValue& in) {
  const Tensor& carried = in.x;
  const int64_t last = carried.dim() - 1;
  SONATA_CHECK(carried.dim() >= 1 && carried.size(last) == in_features + shard.begin, "row piece [",
               shard.begin, ":", shard.end, "]: expected ", in_features + shard.begin,
               " features along the last dim, got ", shape_str(carried.shape()));
  const bool first = shard.begin == 0, last_piece = shard.end == shard.rows;
  const Tensor x = first ? carried : carried.slice(last, 0, in_features);
  const Tensor y = piece.forward(x);
  if (!last_piece) return {cat({carried, y}, last), in.lengths};
  if (first) return {y, in.lengths};
  return {cat({carried.slice(last, in_features, in_features + shard.begin), y}, last), in.lengths};
}

}  // namespace sonata

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

// A piece of a layer cut by rows: its tensors are rows [begin, end) along dim 0 of the whole
// model's tensors of the same names (out of `rows`). rows == 0: a whole layer.
struct RowShard {
  int64_t begin = 0, end = 0, rows = 0;
  bool operator==(const RowShard&) const = default;
};

struct ModelLayer;
// Builds the piece of a layer computing its output features [begin, end).
using RowPieceFactory = std::function<ModelLayer(int64_t begin, int64_t end)>;

struct ModelLayer {
  std::string name;      // for reports: "features.0-2", "rnn", "classifier.0"
  NamedModules modules;  // what it runs, under their prefixes in the whole model
  std::function<LayerValue(const LayerValue&)> forward;
  // A layer whose every tensor has its `rows` output features along dim 0 (a Linear) can be
  // cut into row pieces, so that a layer larger than a stage's share of the model is spread
  // over several stages (comm/pipeline/partition.h). rows == 0: it cannot.
  int64_t rows = 0;
  RowPieceFactory piece;
  // Set on a piece: which rows it holds, and the whole layer's modules it was cut from (no
  // stage trains those; a pipeline releases them on every rank).
  RowShard shard;
  NamedModules whole;
};

using LayerSequence = std::vector<ModelLayer>;

// A layer that cannot be cut into rows: `name`, its modules and its forward.
ModelLayer module_layer(std::string name, NamedModules modules,
                        std::function<LayerValue(const LayerValue&)> forward);

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

// The piece of `layer` (which has rows > 0) computing its output features [begin, end), with
// its shard and whole modules set.
ModelLayer row_piece(const ModelLayer& layer, int64_t begin, int64_t end);

// The forward of a row piece whose `piece` module maps x [..., in_features] to the features
// [begin, end) of a layer of `rows` output features, along the last dim. The pieces of one
// layer run on consecutive stages and pass one tensor between them, so that a pipeline sends
// them like any activation: x with the features computed so far appended, [..., in_features +
// begin]; the last piece drops x and returns the whole layer's output [..., rows].
LayerValue run_row_piece(Module& piece, int64_t in_features, RowShard shard, const LayerValue& in);

}  // namespace sonata

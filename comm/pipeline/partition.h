#pragma once
// Cutting a model's layer sequence into S contiguous stages: at explicit cut points, or
// balanced by a cost per layer (parameter bytes, or the time of a forward and backward
// measured once on a sample micro-batch).
#include <string>
#include <vector>

#include "comm/process_group.h"
#include "engine/nn/layer_sequence.h"

namespace sonata {

// `cuts` are the first layers of stages 1..S-1: strictly increasing, each in (0, layers).
std::vector<LayerRange> partition_at(size_t layers, const std::vector<size_t>& cuts);

// `stages` non-empty contiguous ranges minimising the largest total cost of a stage; among
// equally good partitions, the one whose first stages are largest. Costs are >= 0.
std::vector<LayerRange> partition_balanced(const std::vector<double>& costs, int stages);

// A partition that may cut layers into row pieces (ModelLayer::piece): the sequence the
// stages run (each cut layer replaced by its pieces, one per stage it spans) and the stages'
// ranges over it.
struct StagePlan {
  LayerSequence layers;
  std::vector<LayerRange> ranges;
  std::vector<std::string> cut_layers;  // the names of the layers cut into pieces
};

// partition_balanced over `costs` (one per layer of `layers`), where a layer that can be cut
// into row pieces counts as kRowChunksPerStage x `stages` equal chunks of its rows and
// cost, so that a stage boundary may fall inside it. A layer is cut only when that lowers the
// busiest stage's cost by at least 10 % against whole layers; otherwise the plan is
// partition_balanced's. Consecutive chunks on one stage form one piece.
constexpr int64_t kRowChunksPerStage = 8;
StagePlan partition_with_row_pieces(const LayerSequence& layers, const std::vector<double>& costs,
                                    int stages);

// Seconds of each layer's forward and backward (a gradient of ones) on `sample`, run
// through the layers in order. The layers' buffers (BatchNorm statistics) and gradients are
// left as they were; deferred tensors (engine/deferred_init.h) are made for their layer's
// turn alone and left deferred, so the whole model is never made at once. Timings differ between
// ranks: agree on one rank's (broadcast_costs) before partitioning.
std::vector<double> measure_layer_times(const LayerSequence& layers, const LayerValue& sample);

// Rank `root`'s costs on every rank of `group` (a collective; every rank passes as many).
std::vector<double> broadcast_costs(ProcessGroup& group, const std::vector<double>& costs,
                                    int root = 0);

// "0-4 | 5-11 | 12-28" (inclusive layer indices), for logs.
std::string partition_str(const std::vector<LayerRange>& stages);

// partition_str of the plan's stages, and how its cut layers' rows fall on them:
// "0-22 | 23-29; classifier.0 rows 0-1023 | 1024-2047" (each piece counts as a layer).
std::string stage_plan_str(const StagePlan& plan);

}  // namespace sonata

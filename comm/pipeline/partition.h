#pragma once
// Cutting a model's layer sequence into S contiguous stages: at explicit cut points, or
// balanced by a cost per layer (parameter bytes, or the time of a forward and backward
// measured once on a sample micro-batch).
#include <vector>

#include "engine/nn/layer_sequence.h"
#include "comm/process_group.h"

namespace sonata {

// `cuts` are the first layers of stages 1..S-1: strictly increasing, each in (0, layers).
std::vector<LayerRange> partition_at(size_t layers, const std::vector<size_t>& cuts);

// `stages` non-empty contiguous ranges minimising the largest total cost of a stage; among
// equally good partitions, the one whose first stages are largest. Costs are >= 0.
std::vector<LayerRange> partition_balanced(const std::vector<double>& costs, int stages);

// Seconds of each layer's forward and backward (a gradient of ones) on `sample`, run
// through the layers in order. The layers' buffers (BatchNorm statistics) and gradients are
// left as they were. Timings differ between ranks: agree on one rank's (broadcast_costs)
// before partitioning.
std::vector<double> measure_layer_times(const LayerSequence& layers, const LayerValue& sample);

// Rank `root`'s costs on every rank of `group` (a collective; every rank passes as many).
std::vector<double> broadcast_costs(ProcessGroup& group, const std::vector<double>& costs,
                                    int root = 0);

// "0-4 | 5-11 | 12-28" (inclusive layer indices), for logs.
std::string partition_str(const std::vector<LayerRange>& stages);

}  // namespace sonata

#pragma once
// SyncBatchNorm's communication: the engine's BatchNormStatsReducer on a process group, so
// BatchNorm layers normalise with the statistics of the whole global batch. Use with
// set_batch_norm_stats_reducer (models/layers/batch_norm.h) on the model:
//
//   set_batch_norm_stats_reducer(*model, make_batch_norm_stats_reducer(group));
//
// Each training BatchNorm then gathers over the group once in forward and once in backward
// (when x needs a gradient), in the same order on every rank. Backward's gathers interleave
// with the DDP reducer's bucket all-reduces on the same group, which is safe while every
// rank runs the same graph (the same order of ready gradients); give the statistics their own
// group otherwise.
#include <memory>

#include "comm/process_group.h"
#include "engine/ops/batch_norm.h"

namespace sonata {

std::shared_ptr<BatchNormStatsReducer> make_batch_norm_stats_reducer(
    std::shared_ptr<ProcessGroup> group);

}  // namespace sonata

#pragma once
// Batch normalisation over a padded batch of sequences (x [N, C, T, *], sample n's first
// lengths[n] frames along T valid, the rest padding): the batch statistics are those of the
// valid values alone, the output is 0 on padding and so is x's gradient there, and the
// gradient is exactly that of the masked statistics. The result on the valid frames is then
// independent of how far the batch was padded (a multiple of 8 frames for fewer cuDNN
// shapes, or the longest clip), which plain batch_norm's is not: it counts the padding in
// the mean and variance. Otherwise batch_norm's semantics and options (engine/ops/
// batch_norm.h): running stats updated with the unbiased variance of the valid values,
// evaluation with the running stats, weight and bias optional, and with a stats reducer the
// statistics of the valid values of every process (SyncBatchNorm).
//
// lengths: i64 or i32 [N], on any device, each in [0, T]. Training needs at least two valid
// values per channel (on this process, or over every process with a reducer).
#include <memory>

#include "engine/ops/batch_norm.h"
#include "engine/tensor.h"

namespace sonata {

Tensor masked_batch_norm(const Tensor& x, const Tensor& lengths, const Tensor& weight,
                         const Tensor& bias, const Tensor& running_mean, const Tensor& running_var,
                         const BatchNormOptions& options = {},
                         const std::shared_ptr<BatchNormStatsReducer>& stats_reducer = nullptr);

}  // namespace sonata

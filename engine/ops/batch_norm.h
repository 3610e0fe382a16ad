#pragma once
// Batch normalisation, torch.nn.functional.batch_norm's semantics, with an optional fused
// ReLU. x is [N, C, *]: [N, C] (BatchNorm1d), [N, C, L], [N, C, H, W], ...
//
// Training normalises with the batch statistics (biased variance) and, when running_mean and
// running_var are given, updates them in place with the UNBIASED batch variance:
// running = (1 - momentum) * running + momentum * batch. Evaluation normalises with the
// running statistics, which are then required. weight and bias ([C]) are optional
// (affine = false); parameters and running stats may be f32 while x is f16/bf16 (statistics
// are computed in f32, or f64 for f64 inputs). momentum = None (cumulative average) and the
// num_batches_tracked counter are the module's job: pass the momentum it implies.
//
// Gradients flow to x, weight and bias in both modes; in evaluation x's gradient is
// dy * weight / sqrt(running_var + eps).
#include <memory>

#include "engine/tensor.h"

namespace sonata {

// Sync BatchNorm's link to the other processes (torch.nn.SyncBatchNorm): comm/ implements it
// on a process group, so the engine needs no communicator. Given one, training computes
// the statistics of the batch over every process (per-process mean, M2 and count gathered and
// combined with Chan's parallel formula) and backward sums sum(dy) and sum(dy * x_hat) over
// the processes for x's gradient. The weight and bias gradients stay this process's own, as
// in PyTorch: the data-parallel reducer averages them afterwards.
class BatchNormStatsReducer {
 public:
  virtual ~BatchNormStatsReducer() = default;
  // Every process's `values` (contiguous, the same shape and dtype everywhere), stacked by
  // rank: [world_size, *values.shape()]. A collective: every process calls it in turn.
  virtual Tensor gather(const Tensor& values) = 0;
};

struct BatchNormOptions {
  bool training = true;
  double momentum = 0.1;
  double eps = 1e-5;
};

Tensor batch_norm(const Tensor& x, const Tensor& weight, const Tensor& bias,
                  const Tensor& running_mean, const Tensor& running_var,
                  const BatchNormOptions& options = {},
                  const std::shared_ptr<BatchNormStatsReducer>& stats_reducer = nullptr);

// relu(batch_norm(...)) in one pass; the backward recomputes the ReLU mask from the output.
Tensor batch_norm_relu(const Tensor& x, const Tensor& weight, const Tensor& bias,
                       const Tensor& running_mean, const Tensor& running_var,
                       const BatchNormOptions& options = {},
                       const std::shared_ptr<BatchNormStatsReducer>& stats_reducer = nullptr);

}  // namespace sonata

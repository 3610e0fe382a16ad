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
#include "engine/tensor.h"

namespace sonata {

struct BatchNormOptions {
  bool training = true;
  double momentum = 0.1;
  double eps = 1e-5;
};

Tensor batch_norm(const Tensor& x, const Tensor& weight, const Tensor& bias,
                  const Tensor& running_mean, const Tensor& running_var,
                  const BatchNormOptions& options = {});

// relu(batch_norm(...)) in one pass; the backward recomputes the ReLU mask from the output.
Tensor batch_norm_relu(const Tensor& x, const Tensor& weight, const Tensor& bias,
                       const Tensor& running_mean, const Tensor& running_var,
                       const BatchNormOptions& options = {});

}  // namespace sonata

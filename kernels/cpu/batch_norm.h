#pragma once
// Batch normalisation over a contiguous [batch, channels, spatial] block (x of shape
// [N, C, *] with spatial = the product of the trailing dims), CPU reference in f32 and f64.
// The CUDA twin in kernels/cuda/batch_norm.h has the same functions plus a trailing stream.
//
// `dtype` is the element type of x, y and their gradients. Every per-channel array (weight,
// bias, running stats, mean, invstd, the gradient sums and the workspace) is in the
// statistics type: f64 when dtype is f64, else f32. The engine casts parameters to it.
// Statistics are accumulated in double here (fp32 or double on CUDA).
#include <cstdint>

#include "base/dtype.h"

namespace sonata::kernels::cpu {

// Statistics-type elements of scratch that batch_norm_statistics and
// batch_norm_backward_reduce need (0 on the CPU; the CUDA kernels keep per-block partials).
int64_t batch_norm_workspace_size(int64_t batch, int64_t channels, int64_t spatial);

// Per-channel mean and invstd = 1 / sqrt(biased variance + eps) of x. When running_mean and
// running_var are not null they are updated in place with the UNBIASED variance:
// running = (1 - momentum) * running + momentum * batch. Needs batch * spatial >= 2 for the
// unbiased variance (the engine checks).
void batch_norm_statistics(DType dtype, const void* x, int64_t batch, int64_t channels,
                           int64_t spatial, double eps, double momentum, void* running_mean,
                           void* running_var, void* mean, void* invstd, void* workspace);

// y = (x - mean) * invstd * weight + bias, then ReLU when `relu` (NaN stays NaN). weight and bias
// may be null (1 and 0).
void batch_norm_apply(DType dtype, const void* x, const void* mean, const void* invstd,
                      const void* weight, const void* bias, int64_t batch, int64_t channels,
                      int64_t spatial, bool relu, void* y);

// Per-channel sum_dy = sum(dy) and sum_dy_xhat = sum(dy * (x - mean) * invstd): the
// gradients of bias and weight. With the fused ReLU, `relu_output` is the forward's output
// and dy is taken as 0 where it is not positive; otherwise it is null.
void batch_norm_backward_reduce(DType dtype, const void* grad_y, const void* x,
                                const void* relu_output, const void* mean, const void* invstd,
                                int64_t batch, int64_t channels, int64_t spatial, void* workspace,
                                void* sum_dy, void* sum_dy_xhat);

// grad_x for batch statistics (sum_dy and sum_dy_xhat given, m = batch * spatial):
//   invstd * weight * (dy - sum_dy / m - x_hat * sum_dy_xhat / m),
// or for fixed (running) statistics when sum_dy is null: invstd * weight * dy. dy is masked
// by relu_output > 0 when relu_output is not null; weight may be null.
void batch_norm_backward_input(DType dtype, const void* grad_y, const void* x,
                               const void* relu_output, const void* mean, const void* invstd,
                               const void* weight, const void* sum_dy, const void* sum_dy_xhat,
                               int64_t batch, int64_t channels, int64_t spatial, void* grad_x);

}  // namespace sonata::kernels::cpu

#pragma once
// Batch normalisation over a contiguous [batch, channels, spatial] block, hand-written CUDA
// (no cuDNN), f16 / bf16 / f32 / f64. Same functions and contracts as the CPU reference in
// kernels/cpu/batch_norm.h, plus a trailing stream.
//
// `dtype` is the element type of x, y and their gradients; every per-channel array (weight,
// bias, running stats, mean, invstd, gradient sums, workspace) is f32, or f64 when dtype is
// f64: half inputs accumulate in fp32. The kernels allocate nothing: the reductions split each
// channel over several blocks, whose partials go to a caller-provided workspace.
#include <cstdint>

#include <cuda_runtime_api.h>

#include "base/dtype.h"

namespace sonata::kernels::cuda {

// Statistics-type elements of workspace the two reductions need.
int64_t batch_norm_workspace_size(int64_t batch, int64_t channels, int64_t spatial,
                                  cudaStream_t stream);

// Per-channel mean and invstd = 1 / sqrt(biased variance + eps) (planes: one-pass Welford with
// Chan's merge; columns: sums shifted by a value of the channel per thread, one Chan merge per
// block, batch_norm_columns.cu); running stats (if not null) updated with the unbiased variance.
void batch_norm_statistics(DType dtype, const void* x, int64_t batch, int64_t channels,
                           int64_t spatial, double eps, double momentum, void* running_mean,
                           void* running_var, void* mean, void* invstd, void* workspace,
                           cudaStream_t stream);

// y = (x - mean) * invstd * weight + bias, then ReLU when `relu` (NaN stays NaN); weight, bias may
// be null.
void batch_norm_apply(DType dtype, const void* x, const void* mean, const void* invstd,
                      const void* weight, const void* bias, int64_t batch, int64_t channels,
                      int64_t spatial, bool relu, void* y, cudaStream_t stream);

// sum_dy = sum(dy), sum_dy_xhat = sum(dy * x_hat) per channel; dy masked by
// relu_output > 0 when relu_output is not null.
void batch_norm_backward_reduce(DType dtype, const void* grad_y, const void* x,
                                const void* relu_output, const void* mean, const void* invstd,
                                int64_t batch, int64_t channels, int64_t spatial, void* workspace,
                                void* sum_dy, void* sum_dy_xhat, cudaStream_t stream);

// grad_x with batch statistics (sum_dy given) or fixed statistics (sum_dy null).
void batch_norm_backward_input(DType dtype, const void* grad_y, const void* x,
                               const void* relu_output, const void* mean, const void* invstd,
                               const void* weight, const void* sum_dy, const void* sum_dy_xhat,
                               int64_t batch, int64_t channels, int64_t spatial, void* grad_x,
                               cudaStream_t stream);

}  // namespace sonata::kernels::cuda

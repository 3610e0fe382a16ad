#pragma once
// Batch normalisation over padded sequences, hand-written CUDA, f16 / bf16 / f32 / f64: the
// same functions and contracts as the CPU reference in kernels/cpu/masked_batch_norm.h, plus
// a trailing stream. `lengths` (i64 [batch]) is in device memory; per-channel arrays are f32,
// or f64 beside f64 data (half inputs accumulate in fp32). No workspace: each channel's
// reduction is one block, in a fixed order (deterministic).
#include <cstdint>

#include <cuda_runtime_api.h>

#include "base/dtype.h"
#include "kernels/common/sequence_layout.h"

namespace sonata::kernels::cuda {

void masked_batch_norm_statistics(DType dtype, const void* x, const int64_t* lengths,
                                  SequenceLayout layout, int64_t count, double eps, double momentum,
                                  void* running_mean, void* running_var, void* mean, void* invstd,
                                  cudaStream_t stream);

void masked_batch_norm_apply(DType dtype, const void* x, const int64_t* lengths, const void* mean,
                             const void* invstd, const void* weight, const void* bias,
                             SequenceLayout layout, void* y, cudaStream_t stream);

void masked_batch_norm_backward_reduce(DType dtype, const void* grad_y, const void* x,
                                       const int64_t* lengths, const void* mean, const void* invstd,
                                       SequenceLayout layout, void* sum_dy, void* sum_dy_xhat,
                                       cudaStream_t stream);

void masked_batch_norm_backward_input(DType dtype, const void* grad_y, const void* x,
                                      const int64_t* lengths, const void* mean, const void* invstd,
                                      const void* weight, const void* sum_dy,
                                      const void* sum_dy_xhat, int64_t count, SequenceLayout layout,
                                      void* grad_x, cudaStream_t stream);

}  // namespace sonata::kernels::cuda

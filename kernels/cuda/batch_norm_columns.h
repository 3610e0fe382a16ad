#pragma once
// The [rows, channels] half of the CUDA batch norm (BatchNorm1d over [N, C], and channels-last
// [N, C, H, W], which the engine passes as N * H * W rows of C channels): kernels/cuda/
// batch_norm.cu calls these when kernels/common/batch_norm_split.h says "by columns". Each
// thread owns a vector of neighbouring channels (16 bytes when the channels fill whole 16-byte
// packs and every pointer is aligned, else 8, else one element) and walks rows, so the
// per-channel values are worked out once per thread, not per element. Pointer and dtype
// conventions are those of kernels/cuda/batch_norm.h.
#include <cstdint>

#include <cuda_runtime_api.h>

#include "base/dtype.h"

namespace sonata::kernels::cuda {

// partial: [3][channels * splits] (count, mean, m2) of each run of rows (the split plan of
// batch_norm_split.h), merged by batch_norm.cu's finalize kernel.
void batch_norm_columns_statistics(DType dtype, const void* x, int64_t rows, int64_t channels,
                                   int splits, void* partial, cudaStream_t stream);

// partial: [2][channels * splits] (sum dy, sum dy * (x - mean)); dy masked by relu_output > 0
// when relu_output is not null.
void batch_norm_columns_backward_sums(DType dtype, const void* grad_y, const void* x,
                                      const void* relu_output, const void* mean, int64_t rows,
                                      int64_t channels, int splits, void* partial,
                                      cudaStream_t stream);

void batch_norm_columns_apply(DType dtype, const void* x, const void* mean, const void* invstd,
                              const void* weight, const void* bias, int64_t rows, int64_t channels,
                              bool relu, void* y, cudaStream_t stream);

void batch_norm_columns_backward_input(DType dtype, const void* grad_y, const void* x,
                                       const void* relu_output, const void* mean,
                                       const void* invstd, const void* weight, const void* sum_dy,
                                       const void* sum_dy_xhat, int64_t rows, int64_t channels,
                                       void* grad_x, cudaStream_t stream);

}  // namespace sonata::kernels::cuda

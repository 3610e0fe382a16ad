#pragma once
// Stable softmax / log_softmax over the middle axis of a contiguous [outer, n, inner] block.
#include <cstdint>

#include <cuda_runtime_api.h>

#include "base/dtype.h"

namespace sonata::kernels::cuda {

void softmax(DType dtype, bool log, const void* in, void* out, int64_t outer, int64_t n,
             int64_t inner, cudaStream_t stream);
// From the forward output y: softmax gx = y * (gy - sum(gy * y)); log_softmax
// gx = gy - exp(y) * sum(gy).
void softmax_backward(DType dtype, bool log, const void* grad_y, const void* y, void* grad_x,
                      int64_t outer, int64_t n, int64_t inner, cudaStream_t stream);

}  // namespace sonata::kernels::cuda

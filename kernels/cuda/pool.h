#pragma once
// 2-D pooling over contiguous NCHW planes on CUDA (f16, bf16, f32, f64; halves compare and
// accumulate in fp32). Same interface as kernels/cpu/pool.h plus the stream. The backward
// passes gather (one thread per input element) instead of scattering with atomics, so they
// are deterministic and accumulate in fp32 even for half types.
#include <cstdint>

#include <cuda_runtime_api.h>

#include "base/dtype.h"
#include "kernels/common/conv_shape.h"

namespace sonata::kernels::cuda {

void max_pool2d(DType dtype, const Pool2dShape& shape, const void* x, void* y, int64_t* indices,
                cudaStream_t stream);
void max_pool2d_backward(DType dtype, const Pool2dShape& shape, const void* grad_y,
                         const int64_t* indices, void* grad_x, cudaStream_t stream);
void adaptive_avg_pool2d(DType dtype, const Pool2dShape& shape, const void* x, void* y,
                         cudaStream_t stream);
void adaptive_avg_pool2d_backward(DType dtype, const Pool2dShape& shape, const void* grad_y,
                                  void* grad_x, cudaStream_t stream);

}  // namespace sonata::kernels::cuda

#pragma once
// 2-D pooling over channels-last [N, H, W, C] memory on CUDA, the twins of kernels/cuda/pool.h's
// NCHW kernels: the same windows, comparisons, summation order and indices (ih * W + iw within
// the plane, as PyTorch's), so the results equal the NCHW kernels' bit for bit; shape.planes is
// N here, and `channels` C. Each thread owns a vector of neighbouring channels (16 bytes when C
// fills whole packs and the pointers are aligned; kernels/cuda/channel_vectors.cuh), so no
// transpose is needed and every access is a whole pack of consecutive channels. indices is
// channels-last like y. CUDA only: the CPU reference pools channels-last input through NCHW.
#include <cstdint>

#include <cuda_runtime_api.h>

#include "base/dtype.h"
#include "kernels/common/conv_shape.h"

namespace sonata::kernels::cuda {

void max_pool2d_channels_last(DType dtype, const Pool2dShape& shape, int64_t channels,
                              const void* x, void* y, int64_t* indices, cudaStream_t stream);
void max_pool2d_channels_last_backward(DType dtype, const Pool2dShape& shape, int64_t channels,
                                       const void* grad_y, const int64_t* indices, void* grad_x,
                                       cudaStream_t stream);
void adaptive_avg_pool2d_channels_last(DType dtype, const Pool2dShape& shape, int64_t channels,
                                       const void* x, void* y, cudaStream_t stream);
void adaptive_avg_pool2d_channels_last_backward(DType dtype, const Pool2dShape& shape,
                                                int64_t channels, const void* grad_y, void* grad_x,
                                                cudaStream_t stream);

}  // namespace sonata::kernels::cuda

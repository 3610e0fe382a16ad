#pragma once
// 2-D convolution (NCHW or NHWC, groups = 1) through cuDNN's convolution API: f16 and bf16
// on tensor cores with fp32 accumulation, f32 with TF32 allowed or not as base/math_mode.h
// says (off: full fp32, matching the CPU reference tightly), f64. Same interface as
// kernels/cpu/conv.h plus the stream.
//
// conv2d_workspace_bytes picks the pass's algorithm (once per shape, dtype, TF32 mode and
// determinism, by timing every algorithm with cudnnFind unless the search is set to
// heuristic; then cached) and returns the scratch it needs, at most 256 MiB; the caller
// allocates that much on the device and passes it to the pass. Without cuDNN at build time
// every function throws.
#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

#include "base/dtype.h"
#include "kernels/common/conv_shape.h"

namespace sonata::kernels::cuda {

size_t conv2d_workspace_bytes(DType dtype, const Conv2dShape& shape, ConvPass pass,
                              cudaStream_t stream);

// How algorithms are chosen: measured (cudnnFind, as PyTorch's cudnn.benchmark; the
// default) or heuristic (cuDNN's ranking, no timing runs). Applies to shapes not yet cached.
enum class ConvAlgorithmSearch { measured, heuristic };
void set_conv_algorithm_search(ConvAlgorithmSearch search);

// Plans (descriptors and chosen algorithms) kept at most, least recently used evicted first.
inline constexpr size_t kDefaultConvPlanCacheCapacity = 64;
void set_conv_plan_cache_capacity(size_t capacity);  // at least 1
size_t conv_plan_cache_size();

// y = conv(x, weight) + bias; bias may be null.
void conv2d_forward(DType dtype, const Conv2dShape& shape, const void* x, const void* weight,
                    const void* bias, void* y, void* workspace, size_t workspace_bytes,
                    cudaStream_t stream);
// grad_x (overwritten) from grad_y and weight.
void conv2d_backward_input(DType dtype, const Conv2dShape& shape, const void* grad_y,
                           const void* weight, void* grad_x, void* workspace,
                           size_t workspace_bytes, cudaStream_t stream);
// grad_weight (and grad_bias when not null), overwritten, from grad_y and x.
void conv2d_backward_weight(DType dtype, const Conv2dShape& shape, const void* grad_y,
                            const void* x, void* grad_weight, void* grad_bias, void* workspace,
                            size_t workspace_bytes, cudaStream_t stream);

// The bias halves of the passes, as plain kernels (kernels/cuda/conv_bias.cu): y[n, c, p] +=
// bias[c], and grad_bias[c] = sum over n, p of grad_y[n, c, p] (accumulated in fp32, or
// fp64 for f64).
void add_channel_bias(DType dtype, void* y, const void* bias, int64_t n, int64_t channels,
                      int64_t plane, cudaStream_t stream);
void channel_bias_grad(DType dtype, const void* grad_y, void* grad_bias, int64_t n,
                       int64_t channels, int64_t plane, cudaStream_t stream);

}  // namespace sonata::kernels::cuda

#pragma once
// 2-D convolution (NCHW, groups = 1) on the CPU, f32 and f64, by one of two algorithms:
// - im2col + one OpenBLAS GEMM per chunk of images, the chunk's columns laid side by side
//   ([c_in*kh*kw, images*h_out*w_out]) so that BLAS threads one large product instead of
//   many small ones;
// - a direct convolution (kernels/cpu/conv_direct.h): every forward pass, the input
//   gradient of 8 or more input channels, the weight gradient of filters 4 or more columns
//   wide or of 8 or more input channels (all but a network's first 3x3 layer).
// `automatic` picks the direct one where it suits; tests name each algorithm explicitly.
//
// Every pass works in a caller-provided workspace of conv2d_workspace_bytes(pass) bytes
// (kernels never allocate); the CUDA twin in kernels/cuda/conv.h has the same interface.
#include <cstddef>
#include <cstdint>

#include "base/dtype.h"
#include "kernels/common/conv_shape.h"

namespace sonata::kernels::cpu {

enum class CpuConvAlgorithm : uint8_t { automatic, im2col_gemm, direct };

// The algorithm `automatic` resolves to for this pass.
CpuConvAlgorithm conv2d_algorithm(const Conv2dShape& shape, ConvPass pass);

// The workspace of `pass` under `algorithm`; a pass must be given the same algorithm.
size_t conv2d_workspace_bytes(DType dtype, const Conv2dShape& shape, ConvPass pass,
                              CpuConvAlgorithm algorithm = CpuConvAlgorithm::automatic);

// y = conv(x, weight) + bias; bias may be null.
void conv2d_forward(DType dtype, const Conv2dShape& shape, const void* x, const void* weight,
                    const void* bias, void* y, void* workspace, size_t workspace_bytes,
                    CpuConvAlgorithm algorithm = CpuConvAlgorithm::automatic);
// grad_x = conv_transpose(grad_y, weight), overwritten.
void conv2d_backward_input(DType dtype, const Conv2dShape& shape, const void* grad_y,
                           const void* weight, void* grad_x, void* workspace,
                           size_t workspace_bytes,
                           CpuConvAlgorithm algorithm = CpuConvAlgorithm::automatic);
// grad_weight (and grad_bias when not null) from grad_y and x, overwritten.
void conv2d_backward_weight(DType dtype, const Conv2dShape& shape, const void* grad_y,
                            const void* x, void* grad_weight, void* grad_bias, void* workspace,
                            size_t workspace_bytes,
                            CpuConvAlgorithm algorithm = CpuConvAlgorithm::automatic);

}  // namespace sonata::kernels::cpu

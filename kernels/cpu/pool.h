#pragma once
// 2-D pooling over contiguous NCHW planes on the CPU, f32 and f64. The CUDA twin in
// kernels/cuda/pool.h has the same interface plus a trailing stream.
#include <cstdint>

#include "base/dtype.h"
#include "kernels/common/conv_shape.h"

namespace sonata::kernels::cpu {

// y = the window maxima; indices = each maximum's flat h*w index within its plane (PyTorch):
// the first maximum on ties, a NaN wins over any number. Padding never wins.
void max_pool2d(DType dtype, const Pool2dShape& shape, const void* x, void* y, int64_t* indices);
// grad_x (overwritten) receives each grad_y at its window's index.
void max_pool2d_backward(DType dtype, const Pool2dShape& shape, const void* grad_y,
                         const int64_t* indices, void* grad_x);

// Means over PyTorch's adaptive windows (kernels/common/conv_shape.h); shape's h, w, h_out,
// w_out and planes are used.
void adaptive_avg_pool2d(DType dtype, const Pool2dShape& shape, const void* x, void* y);
void adaptive_avg_pool2d_backward(DType dtype, const Pool2dShape& shape, const void* grad_y,
                                  void* grad_x);

}  // namespace sonata::kernels::cpu

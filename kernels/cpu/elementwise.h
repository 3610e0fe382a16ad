#pragma once
// CPU elementwise kernels: the numerical reference for kernels/cuda/elementwise.h, which
// has the same functions with a trailing stream. Float ops take f32 and f64; copy, fill,
// compare and where take every dtype. Outputs are contiguous; inputs of unary kernels too.
#include <cstdint>

#include "base/dtype.h"
#include "kernels/common/elementwise_ops.h"
#include "kernels/common/layout.h"

namespace sonata::kernels::cpu {

void unary(UnaryOp op, DType dtype, const void* x, void* y, int64_t n, double a, double b);
// grad_x = grad_y * d op(x)/dx; x or y may be null when the op's rule does not read it.
void unary_grad(UnaryOp op, DType dtype, const void* grad_y, const void* x, const void* y,
                void* grad_x, int64_t n, double a, double b);
// out (contiguous, layout.sizes) = op(x, y); layout.strides[0] walks x, [1] walks y.
void binary(BinaryOp op, DType dtype, const StridedLayout& layout, const void* x, const void* y,
            void* out);
void compare(CompareOp op, DType dtype, const StridedLayout& layout, const void* x, const void* y,
             bool* out);
// out = cond ? x : y; strides[0] cond, [1] x, [2] y.
void where(DType dtype, const StridedLayout& layout, const bool* cond, const void* x, const void* y,
           void* out);
// dst[strides[0]] = cast(src[strides[1]]): contiguous(), to(dtype), cat, copy_ into views.
void copy(DType dst_dtype, DType src_dtype, const StridedLayout& layout, const void* src,
          void* dst);
void fill(DType dtype, void* out, int64_t n, double value);
void arange(DType dtype, void* out, int64_t n, double start, double step);

}  // namespace sonata::kernels::cpu

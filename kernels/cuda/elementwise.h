#pragma once
// CUDA twin of kernels/cpu/elementwise.h: same functions and semantics, asynchronous on `stream`.
// Float kernels take f16, bf16, f32 and f64 and accumulate half types in f32.
#include <cstdint>

#include <cuda_runtime_api.h>

#include "base/dtype.h"
#include "kernels/common/elementwise_ops.h"
#include "kernels/common/layout.h"

namespace sonata::kernels::cuda {

void unary(UnaryOp op, DType dtype, const void* x, void* y, int64_t n, double a, double b,
           cudaStream_t stream);
// grad_x = grad_y * d op(x)/dx; x or y may be null when the op's rule does not read it.
void unary_grad(UnaryOp op, DType dtype, const void* grad_y, const void* x, const void* y,
                void* grad_x, int64_t n, double a, double b, cudaStream_t stream);
// out (contiguous, layout.sizes) = op(x, y); layout.strides[0] walks x, [1] walks y.
void binary(BinaryOp op, DType dtype, const StridedLayout& layout, const void* x, const void* y,
            void* out, cudaStream_t stream);
void compare(CompareOp op, DType dtype, const StridedLayout& layout, const void* x, const void* y,
             bool* out, cudaStream_t stream);
// out = cond ? x : y; strides[0] cond, [1] x, [2] y.
void where(DType dtype, const StridedLayout& layout, const bool* cond, const void* x, const void* y,
           void* out, cudaStream_t stream);
// dst[strides[0]] = cast(src[strides[1]]): contiguous(), to(dtype), cat, copy_ into views.
void copy(DType dst_dtype, DType src_dtype, const StridedLayout& layout, const void* src, void* dst,
          cudaStream_t stream);
void fill(DType dtype, void* out, int64_t n, double value, cudaStream_t stream);
void arange(DType dtype, void* out, int64_t n, double start, double step, cudaStream_t stream);

}  // namespace sonata::kernels::cuda

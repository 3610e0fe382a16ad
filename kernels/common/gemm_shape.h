#pragma once
// Row-major batched GEMM description: for each b in [0, batch)
//   C_b = alpha * op(A_b) * op(B_b) + beta * C_b,  op(A) is m x k, op(B) is k x n,
// with A_b = a + b * stride_a (elements), likewise B and C; leading dimensions in elements.
#include <cstdint>

namespace sonata::kernels {
struct GemmShape {
  bool trans_a = false, trans_b = false;
  int64_t m = 0, n = 0, k = 0;
  int64_t lda = 0, ldb = 0, ldc = 0;
  int64_t batch = 1, stride_a = 0, stride_b = 0, stride_c = 0;
};
}  // namespace sonata::kernels

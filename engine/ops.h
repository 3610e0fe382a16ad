#pragma once
// Differentiable tensor ops. Each runs on the CPU (f32, f64) and CUDA (f16, bf16, f32, f64;
// half types accumulate in f32), records its backward rule when an input requires grad,
// and has a float64 gradient check in tests/ops/.
#include <utility>
#include <vector>

#include "engine/tensor.h"

namespace sonata {

// Elementwise, binary ops broadcast as numpy/PyTorch do and promote dtypes.
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);
Tensor add(const Tensor& a, double b);
Tensor mul(const Tensor& a, double b);
Tensor neg(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor rsqrt(const Tensor& x);
Tensor abs(const Tensor& x);
Tensor pow(const Tensor& x, double exponent);
Tensor relu(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor hardtanh(const Tensor& x, double min_value = -1.0, double max_value = 1.0);
Tensor clamp(const Tensor& x, double min_value, double max_value);
// cond (bool) ? a : b, broadcasting all three.
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
Tensor masked_fill(const Tensor& x, const Tensor& mask, double value);

// Comparisons give bool tensors and no gradient.
Tensor eq(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, const Tensor& b);

// Reductions over `dims` (empty: all dims).
Tensor sum(const Tensor& x, const std::vector<int64_t>& dims = {}, bool keepdim = false);
Tensor mean(const Tensor& x, const std::vector<int64_t>& dims = {}, bool keepdim = false);
// Variance with Bessel's `correction` (1: unbiased, as torch.var's default).
Tensor var(const Tensor& x, const std::vector<int64_t>& dims = {}, int64_t correction = 1,
           bool keepdim = false);
// Maximum over dims; the gradient is shared evenly between tied maxima (torch.amax).
Tensor amax(const Tensor& x, const std::vector<int64_t>& dims = {}, bool keepdim = false);
// Maximum over one dim and its index (torch.max(x, dim)); the gradient goes to the index.
std::pair<Tensor, Tensor> max(const Tensor& x, int64_t dim, bool keepdim = false);
// Reduces a broadcast gradient back to `shape`.
Tensor sum_to(const Tensor& x, const Shape& shape);

// Linear algebra: matmul of 1-D..N-D with batch broadcasting, bmm of [B,M,K]x[B,K,N],
// addmm = beta*bias + alpha*(a @ b) with bias broadcast to [M,N].
Tensor matmul(const Tensor& a, const Tensor& b);
Tensor bmm(const Tensor& a, const Tensor& b);
Tensor addmm(const Tensor& bias, const Tensor& a, const Tensor& b, double beta = 1.0,
             double alpha = 1.0);

Tensor softmax(const Tensor& x, int64_t dim);
Tensor log_softmax(const Tensor& x, int64_t dim);

// Joining and indexing.
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim);
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim);
std::vector<Tensor> split(const Tensor& x, int64_t split_size, int64_t dim);
std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int64_t dim);
Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index);
// out[..., j, ...] = x[..., index[..., j, ...], ...] along dim; index has x's shape except
// along dim.
Tensor gather(const Tensor& x, int64_t dim, const Tensor& index);
// x with src added at index along dim (out-of-place); differentiable in x and src.
Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);
Tensor cast(const Tensor& x, DType dtype);

inline Tensor operator+(const Tensor& a, const Tensor& b) {
  return add(a, b);
}
inline Tensor operator-(const Tensor& a, const Tensor& b) {
  return sub(a, b);
}
inline Tensor operator*(const Tensor& a, const Tensor& b) {
  return mul(a, b);
}
inline Tensor operator/(const Tensor& a, const Tensor& b) {
  return div(a, b);
}
inline Tensor operator-(const Tensor& x) {
  return neg(x);
}
inline Tensor operator+(const Tensor& a, double b) {
  return add(a, b);
}
inline Tensor operator-(const Tensor& a, double b) {
  return add(a, -b);
}
inline Tensor operator*(const Tensor& a, double b) {
  return mul(a, b);
}
inline Tensor operator*(double a, const Tensor& b) {
  return mul(b, a);
}
inline Tensor operator/(const Tensor& a, double b) {
  return mul(a, 1.0 / b);
}

}  // namespace sonata

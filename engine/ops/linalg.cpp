#include "base/error.h"
#include "engine/autograd/grad_mode.h"
#include "engine/autograd/record.h"
#include "engine/ops.h"
#include "engine/ops/backend.h"
#include "engine/ops/op_utils.h"

namespace sonata {
namespace {

// A [B, R, C] operand as BLAS sees it: row-major with a leading dimension, possibly
// transposed, so that transposed views (the backward's a^T, b^T) need no copy.
struct GemmOperand {
  Tensor tensor;  // keeps the memory alive
  bool transposed = false;
  int64_t ld = 0, batch_stride = 0;
};

GemmOperand gemm_operand(const Tensor& t) {
  const int64_t rows = t.shape()[1], cols = t.shape()[2];
  const Shape& s = t.strides();
  const int64_t batch_stride = t.shape()[0] == 1 ? 0 : s[0];
  if ((s[2] == 1 || cols == 1) && s[1] >= std::max<int64_t>(cols, 1))
    return {t, false, s[1], batch_stride};
  if ((s[1] == 1 || rows == 1) && s[2] >= std::max<int64_t>(rows, 1))
    return {t, true, s[2], batch_stride};
  const Tensor c = t.contiguous();
  return {c, false, std::max<int64_t>(cols, 1), t.shape()[0] == 1 ? 0 : rows * cols};
}

// out[B, M, N] = alpha * a[B, M, K] @ b[B, K, N] + beta * out.
void gemm_into(const Tensor& a, const Tensor& b, Tensor& out, double alpha, double beta) {
  const GemmOperand ga = gemm_operand(a), gb = gemm_operand(b);
  kernels::GemmShape shape;
  shape.trans_a = ga.transposed;
  shape.trans_b = gb.transposed;
  shape.m = a.shape()[1];
  shape.k = a.shape()[2];
  shape.n = b.shape()[2];
  shape.lda = ga.ld;
  shape.ldb = gb.ld;
  shape.ldc = std::max<int64_t>(shape.n, 1);
  shape.batch = out.shape()[0];
  shape.stride_a = ga.batch_stride;
  shape.stride_b = gb.batch_stride;
  shape.stride_c = shape.m * shape.n;
  if (out.numel() == 0) return;
  if (shape.k == 0) {
    out.mul_(beta);
    return;
  }
  SONATA_BACKEND(out.device(), gemm, out.dtype(), shape, alpha, ga.tensor.data_ptr(),
                 gb.tensor.data_ptr(), beta, out.data_ptr());
}

// Gradients of out = a @ b ([B, M, K] x [B, K, N]) computed in the memory order of the operand
// they belong to: a Linear layer multiplies by weight.t(), and a gradient produced directly
// as [N, K] and handed back as a transposed view reaches the weight contiguous, so it is
// accumulated without a copy of the (often largest) tensor in the model.
bool transposed_contiguous(const Tensor& t) {
  return t.transpose(1, 2).is_contiguous() && !t.is_contiguous();
}
Tensor grad_of_lhs(const Tensor& g, const Tensor& a, const Tensor& b) {
  if (transposed_contiguous(a)) return bmm(b, g.transpose(1, 2)).transpose(1, 2);
  return bmm(g, b.transpose(1, 2));
}
Tensor grad_of_rhs(const Tensor& g, const Tensor& a, const Tensor& b) {
  if (transposed_contiguous(b)) return bmm(g.transpose(1, 2), a).transpose(1, 2);
  return bmm(a.transpose(1, 2), g);
}

void check_gemm_inputs(const char* name, const Tensor& a, const Tensor& b) {
  check_same_device(name, {a, b});
  check_floating(name, a);
  SONATA_CHECK(a.dtype() == b.dtype(), name, ": dtypes differ (", dtype_name(a.dtype()), " and ",
               dtype_name(b.dtype()), ")");
}

}  // namespace

Tensor bmm(const Tensor& a, const Tensor& b) {
  check_gemm_inputs("bmm", a, b);
  SONATA_CHECK(a.dim() == 3 && b.dim() == 3, "bmm: expected 3-D tensors, got ",
               shape_str(a.shape()), " and ", shape_str(b.shape()));
  SONATA_CHECK(a.shape()[0] == b.shape()[0] && a.shape()[2] == b.shape()[1], "bmm: shapes ",
               shape_str(a.shape()), " and ", shape_str(b.shape()), " do not multiply");
  Tensor out = empty({a.shape()[0], a.shape()[1], b.shape()[2]}, a.options());
  gemm_into(a, b, out, 1.0, 0.0);
  const Tensor sa = save(a), sb = save(b);
  record("bmm", {a, b}, {&out}, [=](const std::vector<Tensor>& g) {
    return std::vector<Tensor>{grad_of_lhs(g[0], sa, sb), grad_of_rhs(g[0], sa, sb)};
  });
  return out;
}

Tensor addmm(const Tensor& bias, const Tensor& a, const Tensor& b, double beta, double alpha) {
  check_gemm_inputs("addmm", a, b);
  check_same_device("addmm", {bias, a});
  SONATA_CHECK(a.dim() == 2 && b.dim() == 2 && a.shape()[1] == b.shape()[0], "addmm: shapes ",
               shape_str(a.shape()), " and ", shape_str(b.shape()), " do not multiply");
  const Shape out_shape{a.shape()[0], b.shape()[1]};
  broadcast_shapes(bias.shape(), out_shape, "addmm");
  Tensor out = empty({1, out_shape[0], out_shape[1]}, a.options());
  {
    NoGradGuard no_grad;
    out.copy_(bias);
    gemm_into(a.unsqueeze(0), b.unsqueeze(0), out, alpha, beta);
  }
  out = out.detach().view(out_shape);
  const Tensor sa = save(a), sb = save(b);
  const Shape bias_shape = bias.shape();
  record("addmm", {bias, a, b}, {&out}, [=](const std::vector<Tensor>& g) {
    const Tensor g3 = g[0].unsqueeze(0), a3 = sa.unsqueeze(0), b3 = sb.unsqueeze(0);
    auto scaled = [](const Tensor& t, double factor) { return factor == 1.0 ? t : mul(t, factor); };
    return std::vector<Tensor>{sum_to(scaled(g[0], beta), bias_shape),
                               scaled(grad_of_lhs(g3, a3, b3).squeeze(0), alpha),
                               scaled(grad_of_rhs(g3, a3, b3).squeeze(0), alpha)};
  });
  return out;
}

Tensor matmul(const Tensor& a, const Tensor& b) {
  SONATA_CHECK(a.dim() >= 1 && b.dim() >= 1, "matmul: 0-d operands");
  if (a.dim() == 1 && b.dim() == 1) return matmul(a.unsqueeze(0), b).squeeze(0);
  if (a.dim() == 1) return matmul(a.unsqueeze(0), b).squeeze(-2);
  if (b.dim() == 1) return matmul(a, b.unsqueeze(-1)).squeeze(-1);
  const int64_t m = a.size(-2), k = a.size(-1), n = b.size(-1);
  SONATA_CHECK(b.size(-2) == k, "matmul: shapes ", shape_str(a.shape()), " and ",
               shape_str(b.shape()), " do not multiply");
  const Shape a_batch(a.shape().begin(), a.shape().end() - 2);
  const Shape b_batch(b.shape().begin(), b.shape().end() - 2);
  const Shape batch = broadcast_shapes(a_batch, b_batch, "matmul");
  const int64_t batch_count = shape_numel(batch);
  Shape a_full = batch, b_full = batch, out_shape = batch;
  a_full.insert(a_full.end(), {m, k});
  b_full.insert(b_full.end(), {k, n});
  out_shape.insert(out_shape.end(), {m, n});
  const Tensor a3 = a.expand(a_full).reshape({batch_count, m, k});
  const Tensor b3 = b.expand(b_full).reshape({batch_count, k, n});
  return bmm(a3, b3).reshape(out_shape);
}

}  // namespace sonata

#include <algorithm>
#include <cmath>

#include "base/error.h"
#include "engine/autograd/grad_mode.h"
#include "engine/autograd/record.h"
#include "engine/ops.h"
#include "engine/ops/backend.h"
#include "engine/ops/op_utils.h"

namespace sonata {
namespace {

using kernels::BinaryOp;
using kernels::CompareOp;
using kernels::UnaryOp;

// Which forward values the op's gradient rule reads (see kernels/common/elementwise_ops.h).
enum class Saves { nothing, input, output };

Tensor unary_op(UnaryOp op, const char* name, const Tensor& x, Saves saves, double a = 0,
                double b = 0) {
  check_floating(name, x);
  const Tensor in = x.contiguous();
  Tensor out = empty_like(in);
  if (in.numel() > 0)
    SONATA_BACKEND(in.device(), unary, op, in.dtype(), in.data_ptr(), out.data_ptr(), in.numel(), a,
                   b);
  const Tensor saved_x = saves == Saves::input ? save(in) : Tensor();
  const Tensor saved_y = saves == Saves::output ? save(out) : Tensor();
  record(name, {x}, {&out}, [=](const std::vector<Tensor>& g) {
    const Tensor gy = g[0].contiguous();
    Tensor gx = empty_like(gy);
    if (gy.numel() > 0)
      SONATA_BACKEND(gy.device(), unary_grad, op, gy.dtype(), gy.data_ptr(),
                     saved_x.defined() ? saved_x.data_ptr() : nullptr,
                     saved_y.defined() ? saved_y.data_ptr() : nullptr, gx.data_ptr(), gy.numel(), a,
                     b);
    return std::vector<Tensor>{gx};
  });
  return out;
}

// Brings a and b to their promoted dtype (differentiably) and returns the broadcast shape.
Shape promote_pair(const char* name, Tensor& a, Tensor& b) {
  check_same_device(name, {a, b});
  const DType dtype = promote_types(a.dtype(), b.dtype());
  a = a.to(dtype);
  b = b.to(dtype);
  return broadcast_shapes(a.shape(), b.shape(), name);
}

// When a and b are laid out alike as a permutation of a dense block (both transposed weight
// gradients, say), the dims ordered by stride descending, else empty. The sum then keeps
// that layout and runs as one flat loop: a contiguous output would force a strided walk per
// element (an LSTM's 1,200 per-step weight-gradient sums took a third of its step).
std::vector<int64_t> shared_dense_order(const Tensor& a, const Tensor& b, const Shape& shape) {
  if (a.shape() != shape || b.shape() != shape || a.strides() != b.strides() || a.is_contiguous())
    return {};
  std::vector<int64_t> order(shape.size());
  for (size_t d = 0; d < order.size(); ++d) order[d] = int64_t(d);
  std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) {
    return a.strides()[size_t(x)] > a.strides()[size_t(y)];
  });
  int64_t expected = 1;
  for (auto d = order.rbegin(); d != order.rend(); ++d) {
    if (shape[size_t(*d)] != 1 && a.strides()[size_t(*d)] != expected) return {};
    expected *= shape[size_t(*d)];
  }
  return order;
}

Tensor run_binary(BinaryOp op, const Tensor& a, const Tensor& b, const Shape& shape) {
  const std::vector<int64_t> order = shared_dense_order(a, b, shape);
  if (!order.empty()) {
    Shape dense_shape;
    std::vector<int64_t> back(order.size());
    for (size_t i = 0; i < order.size(); ++i) {
      dense_shape.push_back(shape[size_t(order[i])]);
      back[size_t(order[i])] = int64_t(i);
    }
    Tensor dense = empty(dense_shape, a.options());
    const int64_t n = dense.numel();
    if (n > 0) {
      const kernels::StridedLayout layout = make_layout({n}, {{1}, {1}});
      SONATA_BACKEND(a.device(), binary, op, a.dtype(), layout, a.data_ptr(), b.data_ptr(),
                     dense.data_ptr());
    }
    return dense.permute(back);
  }
  Tensor out = empty(shape, a.options());
  if (out.numel() > 0) {
    const kernels::StridedLayout layout =
        make_layout(shape, {broadcast_strides(a, shape), broadcast_strides(b, shape)});
    SONATA_BACKEND(a.device(), binary, op, a.dtype(), layout, a.data_ptr(), b.data_ptr(),
                   out.data_ptr());
  }
  return out;
}

Tensor binary_op(BinaryOp op, const char* name, const Tensor& a_in, const Tensor& b_in) {
  Tensor a = a_in, b = b_in;
  const Shape shape = promote_pair(name, a, b);
  Tensor out = run_binary(op, a, b, shape);
  if (!needs_grad({a, b})) return out;
  const Tensor sa = save(a), sb = save(b), so = save(out);
  const Shape a_shape = a.shape(), b_shape = b.shape();
  record(name, {a, b}, {&out}, [=](const std::vector<Tensor>& grads) {
    const Tensor& g = grads[0];
    Tensor ga, gb;
    switch (op) {
      case BinaryOp::add:
        ga = g, gb = g;
        break;
      case BinaryOp::sub:
        ga = g, gb = neg(g);
        break;
      case BinaryOp::mul:
        ga = mul(g, sb), gb = mul(g, sa);
        break;
      case BinaryOp::div:
        ga = div(g, sb), gb = neg(div(mul(g, so), sb));
        break;
      case BinaryOp::maximum:
      case BinaryOp::minimum: {
        // Ties share the gradient evenly, as torch.maximum does.
        const Tensor a_wins = op == BinaryOp::maximum ? gt(sa, sb) : lt(sa, sb);
        const Tensor tie = eq(sa, sb);
        const Tensor zero = zeros({}, g.options());
        const Tensor half = mul(g, 0.5);
        ga = where(a_wins, g, where(tie, half, zero));
        gb = where(a_wins, zero, where(tie, half, g));
        break;
      }
    }
    return std::vector<Tensor>{sum_to(ga, a_shape), sum_to(gb, b_shape)};
  });
  return out;
}

Tensor compare_op(CompareOp op, const char* name, const Tensor& a_in, const Tensor& b_in) {
  NoGradGuard no_grad;  // comparisons have no gradient
  Tensor a = a_in, b = b_in;
  const Shape shape = promote_pair(name, a, b);
  Tensor out = empty(shape, a.options().with(DType::boolean));
  if (out.numel() > 0) {
    const kernels::StridedLayout layout =
        make_layout(shape, {broadcast_strides(a, shape), broadcast_strides(b, shape)});
    SONATA_BACKEND(a.device(), compare, op, a.dtype(), layout, a.data_ptr(), b.data_ptr(),
                   out.data<bool>());
  }
  return out;
}

Tensor scalar_like(double value, const Tensor& like) {
  return full({}, value, like.options());
}

// The scalar operand of an integer tensor: a fractional one makes the result f32 (as a Python
// float does in torch) instead of being truncated to the integer dtype.
Tensor integer_tensor_scalar(double value, const Tensor& like) {
  if (std::nearbyint(value) == value) return scalar_like(value, like);
  return full({}, value, like.options().with(DType::f32));
}

}  // namespace

Tensor add(const Tensor& a, const Tensor& b) {
  return binary_op(BinaryOp::add, "add", a, b);
}
Tensor sub(const Tensor& a, const Tensor& b) {
  return binary_op(BinaryOp::sub, "sub", a, b);
}
Tensor mul(const Tensor& a, const Tensor& b) {
  return binary_op(BinaryOp::mul, "mul", a, b);
}
Tensor div(const Tensor& a, const Tensor& b) {
  // True division, as torch.div: integer operands divide in f32 (integer division would
  // truncate, and trap on a zero divisor).
  if (!is_floating(promote_types(a.dtype(), b.dtype())))
    return binary_op(BinaryOp::div, "div", a.to(DType::f32), b.to(DType::f32));
  return binary_op(BinaryOp::div, "div", a, b);
}
Tensor maximum(const Tensor& a, const Tensor& b) {
  return binary_op(BinaryOp::maximum, "maximum", a, b);
}
Tensor minimum(const Tensor& a, const Tensor& b) {
  return binary_op(BinaryOp::minimum, "minimum", a, b);
}

Tensor add(const Tensor& a, double b) {
  if (!is_floating(a.dtype())) return add(a, integer_tensor_scalar(b, a));
  return unary_op(UnaryOp::affine, "add_scalar", a, Saves::nothing, 1.0, b);
}
Tensor mul(const Tensor& a, double b) {
  if (!is_floating(a.dtype())) return mul(a, integer_tensor_scalar(b, a));
  return unary_op(UnaryOp::affine, "mul_scalar", a, Saves::nothing, b, 0.0);
}

Tensor neg(const Tensor& x) {
  return unary_op(UnaryOp::neg, "neg", x, Saves::nothing);
}
Tensor exp(const Tensor& x) {
  return unary_op(UnaryOp::exp, "exp", x, Saves::output);
}
Tensor log(const Tensor& x) {
  return unary_op(UnaryOp::log, "log", x, Saves::input);
}
Tensor sqrt(const Tensor& x) {
  return unary_op(UnaryOp::sqrt, "sqrt", x, Saves::output);
}
Tensor rsqrt(const Tensor& x) {
  return unary_op(UnaryOp::rsqrt, "rsqrt", x, Saves::output);
}
Tensor abs(const Tensor& x) {
  return unary_op(UnaryOp::abs, "abs", x, Saves::input);
}
Tensor relu(const Tensor& x) {
  return unary_op(UnaryOp::relu, "relu", x, Saves::input);
}
Tensor sigmoid(const Tensor& x) {
  return unary_op(UnaryOp::sigmoid, "sigmoid", x, Saves::output);
}
Tensor tanh(const Tensor& x) {
  return unary_op(UnaryOp::tanh, "tanh", x, Saves::output);
}
Tensor pow(const Tensor& x, double exponent) {
  return unary_op(UnaryOp::pow, "pow", x, Saves::input, exponent);
}
Tensor hardtanh(const Tensor& x, double min_value, double max_value) {
  SONATA_CHECK(min_value <= max_value, "hardtanh: min_value ", min_value, " > max_value ",
               max_value);
  return unary_op(UnaryOp::hardtanh, "hardtanh", x, Saves::input, min_value, max_value);
}
Tensor clamp(const Tensor& x, double min_value, double max_value) {
  SONATA_CHECK(min_value <= max_value, "clamp: min_value ", min_value, " > max_value ", max_value);
  return unary_op(UnaryOp::clamp, "clamp", x, Saves::input, min_value, max_value);
}

Tensor where(const Tensor& cond, const Tensor& a_in, const Tensor& b_in) {
  SONATA_CHECK(cond.dtype() == DType::boolean, "where: the condition must be bool, got ",
               dtype_name(cond.dtype()));
  Tensor a = a_in, b = b_in;
  Shape shape = promote_pair("where", a, b);
  check_same_device("where", {cond, a});
  shape = broadcast_shapes(shape, cond.shape(), "where");
  Tensor out = empty(shape, a.options());
  if (out.numel() > 0) {
    const kernels::StridedLayout layout = make_layout(
        shape,
        {broadcast_strides(cond, shape), broadcast_strides(a, shape), broadcast_strides(b, shape)});
    SONATA_BACKEND(a.device(), where, a.dtype(), layout, cond.data<bool>(), a.data_ptr(),
                   b.data_ptr(), out.data_ptr());
  }
  if (!needs_grad({a, b})) return out;
  const Tensor saved_cond = save(cond);
  const Shape a_shape = a.shape(), b_shape = b.shape();
  record("where", {a, b}, {&out}, [=](const std::vector<Tensor>& g) {
    const Tensor zero = zeros({}, g[0].options());
    return std::vector<Tensor>{sum_to(where(saved_cond, g[0], zero), a_shape),
                               sum_to(where(saved_cond, zero, g[0]), b_shape)};
  });
  return out;
}

Tensor masked_fill(const Tensor& x, const Tensor& mask, double value) {
  return where(mask, scalar_like(value, x), x);
}

Tensor eq(const Tensor& a, const Tensor& b) {
  return compare_op(CompareOp::eq, "eq", a, b);
}
Tensor ne(const Tensor& a, const Tensor& b) {
  return compare_op(CompareOp::ne, "ne", a, b);
}
Tensor lt(const Tensor& a, const Tensor& b) {
  return compare_op(CompareOp::lt, "lt", a, b);
}
Tensor le(const Tensor& a, const Tensor& b) {
  return compare_op(CompareOp::le, "le", a, b);
}
Tensor gt(const Tensor& a, const Tensor& b) {
  return compare_op(CompareOp::gt, "gt", a, b);
}
Tensor ge(const Tensor& a, const Tensor& b) {
  return compare_op(CompareOp::ge, "ge", a, b);
}

Tensor cast(const Tensor& x, DType dtype) {
  if (x.dtype() == dtype) return x;
  Tensor out = empty(x.shape(), x.options().with(dtype));
  {
    NoGradGuard no_grad;
    out.copy_(x);
  }
  if (!is_floating(dtype)) return out;  // no gradient through integer values
  const DType source = x.dtype();
  record("cast", {x}, {&out},
         [source](const std::vector<Tensor>& g) { return std::vector<Tensor>{g[0].to(source)}; });
  return out;
}

}  // namespace sonata

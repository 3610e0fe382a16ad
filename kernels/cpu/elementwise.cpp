#include "kernels/cpu/elementwise.h"

#include <type_traits>
#include <utility>

#include "base/nvtx.h"
#include "kernels/cpu/capability_region.h"
#include "kernels/cpu/dispatch.h"

SONATA_CPU_BEGIN
namespace {

// Below this many elements the OpenMP fork costs more than the loop.
constexpr int64_t kParallelGrain = 1 << 15;

template <typename Body>
void for_each_index(int64_t n, Body&& body) {
#pragma omp parallel for schedule(static) if (n >= kParallelGrain)
  for (int64_t i = 0; i < n; ++i) body(i);
}

// Calls body(std::integral_constant<Op, op>{}): with the op a compile-time constant the
// switch in unary_apply / binary_apply folds away and the loop vectorises (a switch per
// element ran the SGD update at a fifth of memory speed).
template <typename Op, int Count, typename Body, int... I>
void with_constant_op(Op op, Body&& body, std::integer_sequence<int, I...>) {
  (void)((int(op) == I ? (body(std::integral_constant<Op, Op(I)>{}), true) : false) || ...);
}
template <typename Op, int Count, typename Body>
void with_constant_op(Op op, Body&& body) {
  with_constant_op<Op, Count>(op, body, std::make_integer_sequence<int, Count>{});
}

}  // namespace

void unary(UnaryOp op, DType dtype, const void* x, void* y, int64_t n, double a, double b) {
  SONATA_NVTX_RANGE("sonata::cpu::unary");
  dispatch_f32_f64(dtype, "unary", [&]<typename T>() {
    using C = compute_t<T>;
    const T* in = static_cast<const T*>(x);
    T* out = static_cast<T*>(y);
    const C ca = C(a), cb = C(b);
    with_constant_op<UnaryOp, kUnaryOpCount>(op, [&](auto kOp) {
      for_each_index(n, [&](int64_t i) { out[i] = T(unary_apply<C>(kOp, C(in[i]), ca, cb)); });
    });
  });
}

void unary_grad(UnaryOp op, DType dtype, const void* grad_y, const void* x, const void* y,
                void* grad_x, int64_t n, double a, double b) {
  SONATA_NVTX_RANGE("sonata::cpu::unary_grad");
  dispatch_f32_f64(dtype, "unary_grad", [&]<typename T>() {
    using C = compute_t<T>;
    const T* gy = static_cast<const T*>(grad_y);
    const T* xs = static_cast<const T*>(x);
    const T* ys = static_cast<const T*>(y);
    T* gx = static_cast<T*>(grad_x);
    const C ca = C(a), cb = C(b);
    with_constant_op<UnaryOp, kUnaryOpCount>(op, [&](auto kOp) {
      for_each_index(n, [&](int64_t i) {
        gx[i] = T(unary_grad<C>(kOp, C(gy[i]), xs ? C(xs[i]) : C(0), ys ? C(ys[i]) : C(0), ca, cb));
      });
    });
  });
}

void binary(BinaryOp op, DType dtype, const StridedLayout& layout, const void* x, const void* y,
            void* out) {
  SONATA_NVTX_RANGE("sonata::cpu::binary");
  dispatch_numeric(dtype, "binary", [&]<typename T>() {
    using C = compute_t<T>;
    const T* xs = static_cast<const T*>(x);
    const T* ys = static_cast<const T*>(y);
    T* os = static_cast<T*>(out);
    const int64_t n = layout.numel();
    if (layout.is_contiguous(0) && layout.is_contiguous(1)) {
      with_constant_op<BinaryOp, kBinaryOpCount>(op, [&](auto kOp) {
        for_each_index(n, [&](int64_t i) { os[i] = T(binary_apply<C>(kOp, C(xs[i]), C(ys[i]))); });
      });
    } else {
      for_each_index(n, [&](int64_t i) {
        os[i] = T(binary_apply<C>(op, C(xs[layout.offset(0, i)]), C(ys[layout.offset(1, i)])));
      });
    }
  });
}

void compare(CompareOp op, DType dtype, const StridedLayout& layout, const void* x, const void* y,
             bool* out) {
  SONATA_NVTX_RANGE("sonata::cpu::compare");
  dispatch_numeric(dtype, "compare", [&]<typename T>() {
    using C = compute_t<T>;
    const T* xs = static_cast<const T*>(x);
    const T* ys = static_cast<const T*>(y);
    for_each_index(layout.numel(), [&](int64_t i) {
      out[i] = compare_apply<C>(op, C(xs[layout.offset(0, i)]), C(ys[layout.offset(1, i)]));
    });
  });
}

void where(DType dtype, const StridedLayout& layout, const bool* cond, const void* x, const void* y,
           void* out) {
  SONATA_NVTX_RANGE("sonata::cpu::where");
  dispatch_all(dtype, [&]<typename T>() {
    const T* xs = static_cast<const T*>(x);
    const T* ys = static_cast<const T*>(y);
    T* os = static_cast<T*>(out);
    for_each_index(layout.numel(), [&](int64_t i) {
      os[i] = cond[layout.offset(0, i)] ? xs[layout.offset(1, i)] : ys[layout.offset(2, i)];
    });
  });
}

void copy(DType dst_dtype, DType src_dtype, const StridedLayout& layout, const void* src,
          void* dst) {
  SONATA_NVTX_RANGE("sonata::cpu::copy");
  dispatch_all(dst_dtype, [&]<typename D>() {
    dispatch_all(src_dtype, [&]<typename S>() {
      const S* in = static_cast<const S*>(src);
      D* out = static_cast<D*>(dst);
      // Through the compute type of the wider side, so f64 -> i64 keeps its integer part
      // and half -> f64 is exact.
      using C = std::conditional_t<std::is_same_v<compute_t<S>, double> ||
                                       std::is_same_v<compute_t<D>, double>,
                                   double, compute_t<S>>;
      const int64_t n = layout.numel();
      if (layout.is_contiguous(0) && layout.is_contiguous(1)) {
        for_each_index(n, [&](int64_t i) { out[i] = store<D>(C(load<S>(in[i]))); });
      } else {
        // Row by row along the last dimension: the offsets' divisions once per row, and the
        // inner loop a unit-stride or broadcast one that vectorises (a bias expanded over
        // rows, a permuted copy whose last dimension stays put). Per element, the divisions
        // made this path a tenth of memory speed.
        const int last = layout.ndim - 1;
        const int64_t inner = layout.sizes[last];
        const int64_t rows = inner == 0 ? 0 : n / inner;
        const int64_t out_step = layout.strides[0][last], in_step = layout.strides[1][last];
#pragma omp parallel for schedule(static) if (n >= kParallelGrain)
        for (int64_t r = 0; r < rows; ++r) {
          D* o = out + layout.offset(0, r * inner);
          const S* x = in + layout.offset(1, r * inner);
          if (out_step == 1 && in_step == 1) {
            for (int64_t j = 0; j < inner; ++j) o[j] = store<D>(C(load<S>(x[j])));
          } else if (out_step == 1 && in_step == 0) {
            const D value = store<D>(C(load<S>(x[0])));
            for (int64_t j = 0; j < inner; ++j) o[j] = value;
          } else {
            for (int64_t j = 0; j < inner; ++j)
              o[j * out_step] = store<D>(C(load<S>(x[j * in_step])));
          }
        }
      }
    });
  });
}

void fill(DType dtype, void* out, int64_t n, double value) {
  SONATA_NVTX_RANGE("sonata::cpu::fill");
  dispatch_all(dtype, [&]<typename T>() {
    const T v = store<T>(compute_t<T>(value));
    T* os = static_cast<T*>(out);
    for_each_index(n, [&](int64_t i) { os[i] = v; });
  });
}

void arange(DType dtype, void* out, int64_t n, double start, double step) {
  SONATA_NVTX_RANGE("sonata::cpu::arange");
  dispatch_all(dtype, [&]<typename T>() {
    T* os = static_cast<T*>(out);
    for_each_index(n, [&](int64_t i) { os[i] = store<T>(compute_t<T>(start + double(i) * step)); });
  });
}

SONATA_CPU_END

#if SONATA_CPU_ENTRY_POINTS
// The public functions: each runs the active capability's copy.
namespace sonata::kernels::cpu {

SONATA_CPU_DECLARE(unary)
SONATA_CPU_DECLARE(unary_grad)
SONATA_CPU_DECLARE(binary)
SONATA_CPU_DECLARE(compare)
SONATA_CPU_DECLARE(where)
SONATA_CPU_DECLARE(copy)
SONATA_CPU_DECLARE(fill)
SONATA_CPU_DECLARE(arange)

void unary(UnaryOp op, DType dtype, const void* x, void* y, int64_t n, double a, double b) {
  SONATA_CPU_CALL(unary)(op, dtype, x, y, n, a, b);
}

void unary_grad(UnaryOp op, DType dtype, const void* grad_y, const void* x, const void* y,
                void* grad_x, int64_t n, double a, double b) {
  SONATA_CPU_CALL(unary_grad)(op, dtype, grad_y, x, y, grad_x, n, a, b);
}

void binary(BinaryOp op, DType dtype, const StridedLayout& layout, const void* x, const void* y,
            void* out) {
  SONATA_CPU_CALL(binary)(op, dtype, layout, x, y, out);
}

void compare(CompareOp op, DType dtype, const StridedLayout& layout, const void* x, const void* y,
             bool* out) {
  SONATA_CPU_CALL(compare)(op, dtype, layout, x, y, out);
}

void where(DType dtype, const StridedLayout& layout, const bool* cond, const void* x, const void* y,
           void* out) {
  SONATA_CPU_CALL(where)(dtype, layout, cond, x, y, out);
}

void copy(DType dst_dtype, DType src_dtype, const StridedLayout& layout, const void* src,
          void* dst) {
  SONATA_CPU_CALL(copy)(dst_dtype, src_dtype, layout, src, dst);
}

void fill(DType dtype, void* out, int64_t n, double value) {
  SONATA_CPU_CALL(fill)(dtype, out, n, value);
}

void arange(DType dtype, void* out, int64_t n, double start, double step) {
  SONATA_CPU_CALL(arange)(dtype, out, n, start, step);
}

}  // namespace sonata::kernels::cpu
#endif

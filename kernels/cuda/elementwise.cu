// CUDA elementwise kernels: the arithmetic comes from kernels/common/elementwise_ops.h, as
// on the CPU, so both backends share one definition of every op. The op is a template
// argument, so each kernel's switch folds away and the inner loop is branch-free.
#include "kernels/cuda/elementwise.h"

#include "base/nvtx.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/map.cuh"

namespace sonata::kernels::cuda {
namespace {

// body.template operator()<kValue>() for the enumerator equal to `value`.
template <typename Enum, Enum... kValues, typename F>
void dispatch_enum(Enum value, const char* kernel, F&& body) {
  const bool found = ((value == kValues ? (body.template operator()<kValues>(), true) : false) ||
                      ...);
  SONATA_CHECK(found, "sonata::cuda::", kernel, ": unknown op ", int(value));
}

template <typename F>
void dispatch_unary_op(UnaryOp op, const char* kernel, F&& body) {
  using enum UnaryOp;
  dispatch_enum<UnaryOp, neg, exp, log, sqrt, rsqrt, abs, relu, sigmoid, tanh, pow, hardtanh,
                clamp, affine>(op, kernel, std::forward<F>(body));
}
template <typename F>
void dispatch_binary_op(BinaryOp op, const char* kernel, F&& body) {
  using enum BinaryOp;
  dispatch_enum<BinaryOp, add, sub, mul, div, maximum, minimum>(op, kernel,
                                                                std::forward<F>(body));
}
template <typename F>
void dispatch_compare_op(CompareOp op, const char* kernel, F&& body) {
  using enum CompareOp;
  dispatch_enum<CompareOp, eq, ne, lt, le, gt, ge>(op, kernel, std::forward<F>(body));
}

template <typename T, UnaryOp kOp>
struct UnaryFn {
  compute_t<T> a, b;
  __device__ T operator()(T x) const { return store<T>(unary_apply(kOp, load(x), a, b)); }
};

// A null x or y reads as 0, as on the CPU; the kernel is handed grad_y in its place so that
// every pointer it loads from is valid.
template <typename T, UnaryOp kOp>
struct UnaryGradFn {
  using C = compute_t<T>;
  C a, b;
  bool has_x, has_y;
  __device__ T operator()(T grad_y, T x, T y) const {
    return store<T>(unary_grad(kOp, load(grad_y), has_x ? load(x) : C(0), has_y ? load(y) : C(0),
                               a, b));
  }
};

template <typename T, BinaryOp kOp>
struct BinaryFn {
  __device__ T operator()(T x, T y) const {
    return store<T>(binary_apply(kOp, load(x), load(y)));
  }
};

template <typename T, CompareOp kOp>
struct CompareFn {
  __device__ bool operator()(T x, T y) const { return compare_apply(kOp, load(x), load(y)); }
};

template <typename T>
struct WhereFn {
  __device__ T operator()(bool cond, T x, T y) const { return cond ? x : y; }
};

// Through the compute type of the wider side, exactly as the CPU copy: f64 -> i64 keeps its
// integer part, half -> f64 is exact, and f64 -> half rounds through float.
template <typename D, typename S>
struct CastFn {
  using C = std::conditional_t<std::is_same_v<compute_t<S>, double> ||
                                   std::is_same_v<compute_t<D>, double>,
                               double, compute_t<S>>;
  __device__ D operator()(S value) const { return store<D>(C(load(value))); }
};

template <typename T>
struct FillFn {
  T value;
  __device__ T operator()() const { return value; }
};

// start + i * step rounded as on the CPU: __dmul_rn / __dadd_rn keep nvcc from contracting
// them into one fma, which would round differently from the (unfused) host code.
template <typename T>
__global__ void __launch_bounds__(kBlockSize)
    arange_kernel(int64_t n, T* __restrict__ out, double start, double step) {
  for (int64_t i = thread_index(); i < n; i += thread_count())
    out[i] = store<T>(compute_t<T>(__dadd_rn(start, __dmul_rn(double(i), step))));
}

}  // namespace

void unary(UnaryOp op, DType dtype, const void* x, void* y, int64_t n, double a, double b,
           cudaStream_t stream) {
  SONATA_NVTX_RANGE("sonata::cuda::unary");
  dispatch_float(dtype, "unary", [&]<typename T>() {
    using C = compute_t<T>;
    dispatch_unary_op(op, "unary", [&]<UnaryOp kOp>() {
      launch_map_contiguous(n, stream, UnaryFn<T, kOp>{C(a), C(b)}, static_cast<T*>(y),
                            static_cast<const T*>(x));
      CUDA_CHECK_LAUNCH();
    });
  });
}

void unary_grad(UnaryOp op, DType dtype, const void* grad_y, const void* x, const void* y,
                void* grad_x, int64_t n, double a, double b, cudaStream_t stream) {
  SONATA_NVTX_RANGE("sonata::cuda::unary_grad");
  dispatch_float(dtype, "unary_grad", [&]<typename T>() {
    using C = compute_t<T>;
    const T* gy = static_cast<const T*>(grad_y);
    const T* xs = x ? static_cast<const T*>(x) : gy;
    const T* ys = y ? static_cast<const T*>(y) : gy;
    dispatch_unary_op(op, "unary_grad", [&]<UnaryOp kOp>() {
      const UnaryGradFn<T, kOp> fn{C(a), C(b), x != nullptr, y != nullptr};
      launch_map_contiguous(n, stream, fn, static_cast<T*>(grad_x), gy, xs, ys);
      CUDA_CHECK_LAUNCH();
    });
  });
}

void binary(BinaryOp op, DType dtype, const StridedLayout& layout, const void* x, const void* y,
            void* out, cudaStream_t stream) {
  SONATA_NVTX_RANGE("sonata::cuda::binary");
  dispatch_numeric(dtype, "binary", [&]<typename T>() {
    dispatch_binary_op(op, "binary", [&]<BinaryOp kOp>() {
      launch_map</*out*/ -1, /*first input*/ 0>(layout, stream, BinaryFn<T, kOp>{},
                                                 static_cast<T*>(out), static_cast<const T*>(x),
                                                 static_cast<const T*>(y));
      CUDA_CHECK_LAUNCH();
    });
  });
}

void compare(CompareOp op, DType dtype, const StridedLayout& layout, const void* x, const void* y,
             bool* out, cudaStream_t stream) {
  SONATA_NVTX_RANGE("sonata::cuda::compare");
  dispatch_all(dtype, "compare", [&]<typename T>() {
    dispatch_compare_op(op, "compare", [&]<CompareOp kOp>() {
      launch_map<-1, 0>(layout, stream, CompareFn<T, kOp>{}, out, static_cast<const T*>(x),
                        static_cast<const T*>(y));
      CUDA_CHECK_LAUNCH();
    });
  });
}

void where(DType dtype, const StridedLayout& layout, const bool* cond, const void* x,
           const void* y, void* out, cudaStream_t stream) {
  SONATA_NVTX_RANGE("sonata::cuda::where");
  // Selection moves bits without arithmetic, so one kernel per element width serves all dtypes.
  dispatch_bits(dtype, "where", [&]<typename T>() {
    launch_map<-1, 0>(layout, stream, WhereFn<T>{}, static_cast<T*>(out), cond,
                      static_cast<const T*>(x), static_cast<const T*>(y));
    CUDA_CHECK_LAUNCH();
  });
}

void copy(DType dst_dtype, DType src_dtype, const StridedLayout& layout, const void* src,
          void* dst, cudaStream_t stream) {
  SONATA_NVTX_RANGE("sonata::cuda::copy");
  if (dst_dtype == src_dtype) {
    // Same dtype: a bit copy (the CPU's round trip through the compute type is exact).
    dispatch_bits(dst_dtype, "copy", [&]<typename T>() {
      launch_map</*out*/ 0, /*first input*/ 1>(layout, stream, CastFn<T, T>{},
                                                static_cast<T*>(dst), static_cast<const T*>(src));
      CUDA_CHECK_LAUNCH();
    });
    return;
  }
  dispatch_all(dst_dtype, "copy", [&]<typename D>() {
    dispatch_all(src_dtype, "copy", [&]<typename S>() {
      launch_map<0, 1>(layout, stream, CastFn<D, S>{}, static_cast<D*>(dst),
                       static_cast<const S*>(src));
      CUDA_CHECK_LAUNCH();
    });
  });
}

void fill(DType dtype, void* out, int64_t n, double value, cudaStream_t stream) {
  SONATA_NVTX_RANGE("sonata::cuda::fill");
  dispatch_all(dtype, "fill", [&]<typename T>() {
    const FillFn<T> fn{store<T>(compute_t<T>(value))};
    launch_map_contiguous(n, stream, fn, static_cast<T*>(out));
    CUDA_CHECK_LAUNCH();
  });
}

void arange(DType dtype, void* out, int64_t n, double start, double step, cudaStream_t stream) {
  SONATA_NVTX_RANGE("sonata::cuda::arange");
  dispatch_all(dtype, "arange", [&]<typename T>() {
    linear_kernel(arange_kernel<T>, 0, stream, n, static_cast<T*>(out), start, step);
    CUDA_CHECK_LAUNCH();
  });
}

}  // namespace sonata::kernels::cuda

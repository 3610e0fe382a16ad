// CUDA unary ops, their gradients, fill and arange (binary ops, compare and where live in
// elementwise_binary.cu, copy in elementwise_copy.cu: separate files build in parallel).
// The arithmetic comes from kernels/common/elementwise_ops.h, as on the CPU, so both
// backends share one definition of every op. The op is a template argument, so each
// kernel's switch folds away and the inner loop is branch-free.
#include "kernels/cuda/elementwise.h"

#include "base/nvtx.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/map.cuh"

namespace sonata::kernels::cuda {
namespace {

template <typename F>
void dispatch_unary_op(UnaryOp op, const char* kernel, F&& body) {
  using enum UnaryOp;
  dispatch_enum<UnaryOp, neg, exp, log, sqrt, rsqrt, abs, relu, sigmoid, tanh, pow, hardtanh, clamp,
                affine>(op, kernel, std::forward<F>(body));
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
    return store<T>(
        unary_grad(kOp, load(grad_y), has_x ? load(x) : C(0), has_y ? load(y) : C(0), a, b));
  }
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
  dispatch_f16_bf16_f32_f64(dtype, "unary", [&]<typename T>() {
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
  dispatch_f16_bf16_f32_f64(dtype, "unary_grad", [&]<typename T>() {
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

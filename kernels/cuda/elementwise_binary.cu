// CUDA binary ops, comparisons and where (declared in elementwise.h), with the op as a
// template argument and the arithmetic of kernels/common/elementwise_ops.h.
#include "kernels/cuda/elementwise.h"

#include "base/nvtx.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/map.cuh"

namespace sonata::kernels::cuda {
namespace {

template <typename F>
void dispatch_binary_op(BinaryOp op, const char* kernel, F&& body) {
  using enum BinaryOp;
  dispatch_enum<BinaryOp, add, sub, mul, div, maximum, minimum>(op, kernel, std::forward<F>(body));
}

template <typename F>
void dispatch_compare_op(CompareOp op, const char* kernel, F&& body) {
  using enum CompareOp;
  dispatch_enum<CompareOp, eq, ne, lt, le, gt, ge>(op, kernel, std::forward<F>(body));
}

template <typename T, BinaryOp kOp>
struct BinaryFn {
  __device__ T operator()(T x, T y) const { return store<T>(binary_apply(kOp, load(x), load(y))); }
};

template <typename T, CompareOp kOp>
struct CompareFn {
  __device__ bool operator()(T x, T y) const { return compare_apply(kOp, load(x), load(y)); }
};

template <typename T>
struct WhereFn {
  __device__ T operator()(bool cond, T x, T y) const { return cond ? x : y; }
};

}  // namespace

void binary(BinaryOp op, DType dtype, const StridedLayout& layout, const void* x, const void* y,
            void* out, cudaStream_t stream) {
  SONATA_NVTX_RANGE("sonata::cuda::binary");
  dispatch_all(dtype, "binary", [&]<typename T>() {
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

void where(DType dtype, const StridedLayout& layout, const bool* cond, const void* x, const void* y,
           void* out, cudaStream_t stream) {
  SONATA_NVTX_RANGE("sonata::cuda::where");
  // Selection moves bits without arithmetic, so one kernel per element width serves all dtypes.
  dispatch_bits(dtype, "where", [&]<typename T>() {
    launch_map<-1, 0>(layout, stream, WhereFn<T>{}, static_cast<T*>(out), cond,
                      static_cast<const T*>(x), static_cast<const T*>(y));
    CUDA_CHECK_LAUNCH();
  });
}

}  // namespace sonata::kernels::cuda

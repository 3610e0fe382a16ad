// CUDA copy between any two dtypes and any two layouts (declared in elementwise.h).
#include "kernels/cuda/elementwise.h"

#include "base/nvtx.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/map.cuh"

namespace sonata::kernels::cuda {
namespace {

// Through the compute type of the wider side, exactly as the CPU copy: f64 -> i64 keeps its
// integer part, half -> f64 is exact, and f64 -> half rounds through float.
template <typename D, typename S>
struct CastFn {
  using C = std::conditional_t<std::is_same_v<compute_t<S>, double> ||
                                   std::is_same_v<compute_t<D>, double>,
                               double, compute_t<S>>;
  __device__ D operator()(S value) const { return store<D>(C(load(value))); }
};

}  // namespace

void copy(DType dst_dtype, DType src_dtype, const StridedLayout& layout, const void* src, void* dst,
          cudaStream_t stream) {
  SONATA_NVTX_RANGE("sonata::cuda::copy");
  if (dst_dtype == src_dtype) {
    // Same dtype: a bit copy (the CPU's round trip through the compute type is exact).
    dispatch_bits(dst_dtype, "copy", [&]<typename T>() {
      launch_map</*out*/ 0, /*first input*/ 1>(layout, stream, CastFn<T, T>{}, static_cast<T*>(dst),
                                               static_cast<const T*>(src));
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

}  // namespace sonata::kernels::cuda

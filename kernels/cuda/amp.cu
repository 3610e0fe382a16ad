// The loss scaler's kernels over lists of tensors (multi_tensor.cuh), with the arithmetic of
// kernels/common/amp.h that the CPU reference uses. A block that meets an inf or NaN raises
// the flag once; every such write stores the same 1, so no atomics are needed.
#include "kernels/cuda/amp.h"

#include <climits>

#include "base/nvtx.h"
#include "kernels/common/amp.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/multi_tensor.cuh"

namespace sonata::kernels::cuda {
namespace {

// kUnscale false: the check alone, nothing written (inv_scale is not read).
template <typename T, bool kUnscale>
__global__ void __launch_bounds__(kBlockSize)
    non_finite_check_and_unscale_kernel(const __grid_constant__ TensorList<1> list,
                                        float* found_inf, const float* inv_scale) {
  using C = compute_t<T>;
  const ChunkRange range = block_chunk(list);
  T* x = static_cast<T*>(list.pointers[0][range.tensor]);
  C factor = C(1);
  if constexpr (kUnscale) factor = C(*inv_scale);
  bool non_finite = false;
  for (int64_t i = range.begin + threadIdx.x; i < range.end; i += kBlockSize) {
    const C value = load(x[i]);
    non_finite = non_finite || !is_finite_value(value);
    if constexpr (kUnscale) x[i] = store<T>(value * factor);
  }
  if (__syncthreads_or(non_finite) && threadIdx.x == 0) *found_inf = 1.0f;
}

__global__ void update_scale_kernel(float* scale, float* inv_scale, int32_t* growth_tracker,
                                    float* found_inf, double growth_factor, double backoff_factor,
                                    int64_t growth_interval) {
  update_scale_state(scale, inv_scale, growth_tracker, found_inf, growth_factor, backoff_factor,
                     growth_interval);
}

void check_grid(int64_t chunks, const char* kernel) {
  SONATA_CHECK(chunks <= INT_MAX, "sonata::cuda::", kernel, ": ", chunks,
               " chunks exceed one launch's grid");
}

}  // namespace

void non_finite_check_and_unscale(DType dtype, void* const* tensors, const int64_t* numels,
                                  int64_t count, float* found_inf, const float* inv_scale,
                                  cudaStream_t stream) {
  SONATA_NVTX_RANGE("sonata::cuda::non_finite_check_and_unscale");
  dispatch_f16_bf16_f32_f64(dtype, "non_finite_check_and_unscale", [&]<typename T>() {
    auto describe = [&](int64_t t, std::array<void*, 1>& pointers) {
      pointers = {tensors[t]};
      return numels[t];
    };
    for_each_tensor_list<1>(count, describe, [&](const TensorList<1>& list, int64_t chunks) {
      check_grid(chunks, "non_finite_check_and_unscale");
      if (inv_scale != nullptr) {
        launch(non_finite_check_and_unscale_kernel<T, true>, unsigned(chunks), kBlockSize, 0,
               stream, list, found_inf, inv_scale);
      } else {
        launch(non_finite_check_and_unscale_kernel<T, false>, unsigned(chunks), kBlockSize, 0,
               stream, list, found_inf, inv_scale);
      }
      CUDA_CHECK_LAUNCH();
    });
  });
}

void update_scale(float* scale, float* inv_scale, int32_t* growth_tracker, float* found_inf,
                  double growth_factor, double backoff_factor, int64_t growth_interval,
                  cudaStream_t stream) {
  SONATA_NVTX_RANGE("sonata::cuda::update_scale");
  launch(update_scale_kernel, 1, 1, 0, stream, scale, inv_scale, growth_tracker, found_inf,
         growth_factor, backoff_factor, growth_interval);
  CUDA_CHECK_LAUNCH();
}

}  // namespace sonata::kernels::cuda

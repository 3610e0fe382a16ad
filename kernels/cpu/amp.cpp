#include "kernels/cpu/amp.h"

#include "base/nvtx.h"
#include "kernels/common/amp.h"
#include "kernels/cpu/dispatch.h"

namespace sonata::kernels::cpu {
namespace {

// Below this many elements the OpenMP fork costs more than the loop.
constexpr int64_t kParallelGrain = 1 << 15;

// kUnscale false: the check alone, nothing written.
template <typename T, bool kUnscale>
bool check_tensor(T* __restrict x, int64_t n, const compute_t<T> inv_scale) {
  bool non_finite = false;
#pragma omp parallel for schedule(static) reduction(|| : non_finite) if (n >= kParallelGrain)
  for (int64_t i = 0; i < n; ++i) {
    const compute_t<T> value = load(x[i]);
    non_finite = non_finite || !is_finite_value(value);
    if constexpr (kUnscale) x[i] = store<T>(value * inv_scale);
  }
  return non_finite;
}

}  // namespace

void non_finite_check_and_unscale(DType dtype, void* const* tensors, const int64_t* numels,
                                  int64_t count, float* found_inf, const float* inv_scale) {
  SONATA_NVTX_RANGE("sonata::cpu::non_finite_check_and_unscale");
  dispatch_f16_bf16_f32_f64(dtype, "non_finite_check_and_unscale", [&]<typename T>() {
    bool non_finite = false;
    for (int64_t t = 0; t < count; ++t) {
      T* x = static_cast<T*>(tensors[t]);
      if (inv_scale != nullptr) {
        non_finite |= check_tensor<T, true>(x, numels[t], compute_t<T>(*inv_scale));
      } else {
        non_finite |= check_tensor<T, false>(x, numels[t], compute_t<T>(1));
      }
    }
    if (non_finite) *found_inf = 1.0f;
  });
}

void update_scale(float* scale, float* inv_scale, int32_t* growth_tracker, float* found_inf,
                  double growth_factor, double backoff_factor, int64_t growth_interval) {
  SONATA_NVTX_RANGE("sonata::cpu::update_scale");
  update_scale_state(scale, inv_scale, growth_tracker, found_inf, growth_factor, backoff_factor,
                     growth_interval);
}

}  // namespace sonata::kernels::cpu

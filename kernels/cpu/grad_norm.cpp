#include "kernels/cpu/grad_norm.h"

#include <algorithm>
#include <cmath>

#include "base/nvtx.h"
#include "kernels/common/multi_tensor.h"
#include "kernels/cpu/capability_region.h"
#include "kernels/cpu/dispatch.h"

SONATA_CPU_BEGIN
namespace {

// Below this many elements the OpenMP fork costs more than the loop.
constexpr int64_t kParallelGrain = 1 << 15;

}  // namespace

void squared_norm_partials(DType dtype, const void* const* tensors, const int64_t* numels,
                           int64_t count, double* partials) {
  SONATA_NVTX_RANGE("sonata::cpu::squared_norm_partials");
  dispatch_f32_f64(dtype, "squared_norm_partials", [&]<typename T>() {
    for (int64_t t = 0; t < count; ++t) {
      const T* x = static_cast<const T*>(tensors[t]);
      const int64_t n = numels[t], chunks = chunk_count(n);
      // Chunks in parallel, each summed in order: the result does not depend on the threads.
#pragma omp parallel for schedule(static) if (n >= kParallelGrain)
      for (int64_t c = 0; c < chunks; ++c) {
        const int64_t end = std::min(n, (c + 1) * kTensorChunk);
        double sum = 0;
        for (int64_t i = c * kTensorChunk; i < end; ++i) sum += double(x[i]) * double(x[i]);
        partials[c] = sum;
      }
      partials += chunks;
    }
  });
}

void clip_coefficient(const double* partials, int64_t partial_count, double max_norm,
                      double* result) {
  SONATA_NVTX_RANGE("sonata::cpu::clip_coefficient");
  double sum = 0;
  for (int64_t k = 0; k < partial_count; ++k) sum += partials[k];
  const double norm = std::sqrt(sum);
  const double coefficient = max_norm / (norm + 1e-6);
  result[0] = norm;
  // torch.clamp(max=1.0) keeps a NaN.
  result[1] = coefficient > 1.0 ? 1.0 : coefficient;
}

void scale_tensors(DType dtype, void* const* tensors, const int64_t* numels, int64_t count,
                   const double* factor) {
  SONATA_NVTX_RANGE("sonata::cpu::scale_tensors");
  dispatch_f32_f64(dtype, "scale_tensors", [&]<typename T>() {
    const T f = T(*factor);
    for (int64_t t = 0; t < count; ++t) {
      T* x = static_cast<T*>(tensors[t]);
      const int64_t n = numels[t];
#pragma omp parallel for schedule(static) if (n >= kParallelGrain)
      for (int64_t i = 0; i < n; ++i) x[i] *= f;
    }
  });
}

SONATA_CPU_END

#if SONATA_CPU_ENTRY_POINTS
// The public functions: each runs the active capability's copy.
namespace sonata::kernels::cpu {

SONATA_CPU_DECLARE(squared_norm_partials)
SONATA_CPU_DECLARE(clip_coefficient)
SONATA_CPU_DECLARE(scale_tensors)

void squared_norm_partials(DType dtype, const void* const* tensors, const int64_t* numels,
                           int64_t count, double* partials) {
  SONATA_CPU_CALL(squared_norm_partials)(dtype, tensors, numels, count, partials);
}

void clip_coefficient(const double* partials, int64_t partial_count, double max_norm,
                      double* result) {
  SONATA_CPU_CALL(clip_coefficient)(partials, partial_count, max_norm, result);
}

void scale_tensors(DType dtype, void* const* tensors, const int64_t* numels, int64_t count,
                   const double* factor) {
  SONATA_CPU_CALL(scale_tensors)(dtype, tensors, numels, count, factor);
}

}  // namespace sonata::kernels::cpu
#endif

#include "kernels/cpu/softmax.h"

#include <cmath>
#include <limits>
#include <type_traits>

#include "base/nvtx.h"
#include "kernels/cpu/capability_region.h"
#include "kernels/cpu/dispatch.h"
#include "kernels/cpu/fast_math.h"
#include "kernels/cpu/unit_stride.h"

SONATA_CPU_BEGIN

void softmax(DType dtype, bool log, const void* in, void* out, int64_t outer, int64_t n,
             int64_t inner) {
  SONATA_NVTX_RANGE("sonata::cpu::softmax");
  dispatch_f32_f64(dtype, "softmax", [&]<typename T>() {
    const T* src = static_cast<const T*>(in);
    T* dst = static_cast<T*>(out);
    // In the data's precision (float lanes are twice as many as double ones; a row's sum of
    // exponentials stays within a few float ulp), with exp_or_zero, not std::exp: glibc's is
    // a scalar call. With the stride a compile-time 1 for the last dimension the loops
    // vectorise. log_softmax over CTC's [400, 32, 29], two threads: 1.26 ms forward and
    // 0.73 backward in double, 1.03-1.19 and 0.32-0.35 in float.
    using M = std::conditional_t<std::is_same_v<T, float>, float, double>;
    with_unit_stride(inner, [&](auto stride) {
#pragma omp parallel for collapse(2) schedule(static) if (outer * inner * n >= (1 << 14))
      for (int64_t o = 0; o < outer; ++o) {
        for (int64_t i = 0; i < inner; ++i) {
          const T* x = src + o * n * inner + i;
          T* y = dst + o * n * inner + i;
          M peak = -std::numeric_limits<M>::infinity();
#pragma omp simd reduction(max : peak)
          for (int64_t r = 0; r < n; ++r) peak = std::max(peak, M(x[r * stride]));
          // A row of -inf stays finite-free: exp(-inf - -inf) would be NaN.
          if (std::isinf(peak) && peak < 0) peak = 0;
          M total = 0;
#pragma omp simd reduction(+ : total)
          for (int64_t r = 0; r < n; ++r) total += exp_or_zero(M(x[r * stride]) - peak);
          if (log) {
            // Shifted first, then minus log(total): adding log(total) to a large peak first
            // would round away its low digits (a row [1e10, 1e10] would lose 5e-7).
            const M log_total = M(std::log(double(total)));
#pragma omp simd
            for (int64_t r = 0; r < n; ++r)
              y[r * stride] = T((M(x[r * stride]) - peak) - log_total);
          } else {
            const M inverse = M(1.0 / double(total));
#pragma omp simd
            for (int64_t r = 0; r < n; ++r)
              y[r * stride] = T(exp_or_zero(M(x[r * stride]) - peak) * inverse);
          }
        }
      }
    });
  });
}

void softmax_backward(DType dtype, bool log, const void* grad_y, const void* y, void* grad_x,
                      int64_t outer, int64_t n, int64_t inner) {
  SONATA_NVTX_RANGE("sonata::cpu::softmax_backward");
  dispatch_f32_f64(dtype, "softmax_backward", [&]<typename T>() {
    const T* gy_all = static_cast<const T*>(grad_y);
    const T* y_all = static_cast<const T*>(y);
    T* gx_all = static_cast<T*>(grad_x);
    using M = std::conditional_t<std::is_same_v<T, float>, float, double>;  // as in softmax
    with_unit_stride(inner, [&](auto stride) {
#pragma omp parallel for collapse(2) schedule(static) if (outer * inner * n >= (1 << 14))
      for (int64_t o = 0; o < outer; ++o) {
        for (int64_t i = 0; i < inner; ++i) {
          const int64_t base = o * n * inner + i;
          const T* gy = gy_all + base;
          const T* ys = y_all + base;
          T* gx = gx_all + base;
          M dot = 0;
          if (log) {
#pragma omp simd reduction(+ : dot)
            for (int64_t r = 0; r < n; ++r) dot += M(gy[r * stride]);
#pragma omp simd
            for (int64_t r = 0; r < n; ++r)
              gx[r * stride] = T(M(gy[r * stride]) - exp_or_zero(M(ys[r * stride])) * dot);
          } else {
#pragma omp simd reduction(+ : dot)
            for (int64_t r = 0; r < n; ++r) dot += M(gy[r * stride]) * M(ys[r * stride]);
#pragma omp simd
            for (int64_t r = 0; r < n; ++r)
              gx[r * stride] = T(M(ys[r * stride]) * (M(gy[r * stride]) - dot));
          }
        }
      }
    });
  });
}

SONATA_CPU_END

#if SONATA_CPU_ENTRY_POINTS
// The public functions: each runs the active capability's copy.
namespace sonata::kernels::cpu {

SONATA_CPU_DECLARE(softmax)
SONATA_CPU_DECLARE(softmax_backward)

void softmax(DType dtype, bool log, const void* in, void* out, int64_t outer, int64_t n,
             int64_t inner) {
  SONATA_CPU_CALL(softmax)(dtype, log, in, out, outer, n, inner);
}

void softmax_backward(DType dtype, bool log, const void* grad_y, const void* y, void* grad_x,
                      int64_t outer, int64_t n, int64_t inner) {
  SONATA_CPU_CALL(softmax_backward)(dtype, log, grad_y, y, grad_x, outer, n, inner);
}

}  // namespace sonata::kernels::cpu
#endif

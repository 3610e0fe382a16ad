// Masked (valid-length) batch normalisation on the CPU: one OpenMP task per channel, sums in
// double, statistics in two passes (mean, then squared deviations), as the plain batch norm's
// reference does. Each (sample, channel) plane's valid values are its first
// lengths[n] * inner, so the loops stop there instead of testing every element.
#include "kernels/cpu/masked_batch_norm.h"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "base/nvtx.h"
#include "kernels/cpu/dispatch.h"

namespace sonata::kernels::cpu {
namespace {

template <typename T>
using stat_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

template <typename T>
double param(const void* values, int64_t c, double fallback) {
  return values ? double(static_cast<const stat_t<T>*>(values)[c]) : fallback;
}

int64_t plane_start(const SequenceLayout& layout, int64_t n, int64_t c) {
  return (n * layout.channels + c) * layout.plane();
}

// Values of sample n's plane that are valid: its first lengths[n] frames.
int64_t valid_values(const SequenceLayout& layout, const int64_t* lengths, int64_t n) {
  return std::clamp<int64_t>(lengths[n], 0, layout.time) * layout.inner;
}

bool parallel_worth_it(const SequenceLayout& layout) {
  return layout.channels > 1 && layout.numel() >= (1 << 14);
}

}  // namespace

void masked_batch_norm_statistics(DType dtype, const void* x, const int64_t* lengths,
                                  SequenceLayout layout, int64_t count, double eps, double momentum,
                                  void* running_mean, void* running_var, void* mean, void* invstd) {
  SONATA_NVTX_RANGE("sonata::cpu::masked_batch_norm_statistics");
  dispatch_f32_f64(dtype, "masked_batch_norm_statistics", [&]<typename T>() {
    using S = stat_t<T>;
    const T* in = static_cast<const T*>(x);
#pragma omp parallel for schedule(static) if (parallel_worth_it(layout))
    for (int64_t c = 0; c < layout.channels; ++c) {
      double total = 0;
      for (int64_t n = 0; n < layout.batch; ++n) {
        const T* plane = in + plane_start(layout, n, c);
        for (int64_t k = 0, m = valid_values(layout, lengths, n); k < m; ++k)
          total += double(plane[k]);
      }
      const double mu = total / double(count);
      double squares = 0;
      for (int64_t n = 0; n < layout.batch; ++n) {
        const T* plane = in + plane_start(layout, n, c);
        for (int64_t k = 0, m = valid_values(layout, lengths, n); k < m; ++k) {
          const double d = double(plane[k]) - mu;
          squares += d * d;
        }
      }
      static_cast<S*>(mean)[c] = S(mu);
      static_cast<S*>(invstd)[c] = S(1.0 / std::sqrt(squares / double(count) + eps));
      if (running_mean) {
        S& rm = static_cast<S*>(running_mean)[c];
        S& rv = static_cast<S*>(running_var)[c];
        rm = S((1 - momentum) * double(rm) + momentum * mu);
        rv = S((1 - momentum) * double(rv) + momentum * squares / double(count - 1));
      }
    }
  });
}

void masked_batch_norm_apply(DType dtype, const void* x, const int64_t* lengths, const void* mean,
                             const void* invstd, const void* weight, const void* bias,
                             SequenceLayout layout, void* y) {
  SONATA_NVTX_RANGE("sonata::cpu::masked_batch_norm_apply");
  dispatch_f32_f64(dtype, "masked_batch_norm_apply", [&]<typename T>() {
    using S = stat_t<T>;
    const T* in = static_cast<const T*>(x);
    T* out = static_cast<T*>(y);
#pragma omp parallel for collapse(2) schedule(static) if (parallel_worth_it(layout))
    for (int64_t n = 0; n < layout.batch; ++n)
      for (int64_t c = 0; c < layout.channels; ++c) {
        const double scale = double(static_cast<const S*>(invstd)[c]) * param<T>(weight, c, 1);
        const double shift = param<T>(bias, c, 0) - double(static_cast<const S*>(mean)[c]) * scale;
        const int64_t start = plane_start(layout, n, c), m = valid_values(layout, lengths, n);
        for (int64_t k = 0; k < m; ++k) out[start + k] = T(double(in[start + k]) * scale + shift);
        std::fill(out + start + m, out + start + layout.plane(), T(0));
      }
  });
}

void masked_batch_norm_backward_reduce(DType dtype, const void* grad_y, const void* x,
                                       const int64_t* lengths, const void* mean, const void* invstd,
                                       SequenceLayout layout, void* sum_dy, void* sum_dy_xhat) {
  SONATA_NVTX_RANGE("sonata::cpu::masked_batch_norm_backward_reduce");
  dispatch_f32_f64(dtype, "masked_batch_norm_backward_reduce", [&]<typename T>() {
    using S = stat_t<T>;
    const T* gy = static_cast<const T*>(grad_y);
    const T* in = static_cast<const T*>(x);
#pragma omp parallel for schedule(static) if (parallel_worth_it(layout))
    for (int64_t c = 0; c < layout.channels; ++c) {
      const double mu = double(static_cast<const S*>(mean)[c]);
      double dy_total = 0, dy_centered = 0;
      for (int64_t n = 0; n < layout.batch; ++n) {
        const int64_t start = plane_start(layout, n, c);
        for (int64_t k = 0, m = valid_values(layout, lengths, n); k < m; ++k) {
          const double dy = double(gy[start + k]);
          dy_total += dy;
          dy_centered += dy * (double(in[start + k]) - mu);
        }
      }
      static_cast<S*>(sum_dy)[c] = S(dy_total);
      static_cast<S*>(sum_dy_xhat)[c] = S(dy_centered * double(static_cast<const S*>(invstd)[c]));
    }
  });
}

void masked_batch_norm_backward_input(DType dtype, const void* grad_y, const void* x,
                                      const int64_t* lengths, const void* mean, const void* invstd,
                                      const void* weight, const void* sum_dy,
                                      const void* sum_dy_xhat, int64_t count, SequenceLayout layout,
                                      void* grad_x) {
  SONATA_NVTX_RANGE("sonata::cpu::masked_batch_norm_backward_input");
  dispatch_f32_f64(dtype, "masked_batch_norm_backward_input", [&]<typename T>() {
    using S = stat_t<T>;
    const T* gy = static_cast<const T*>(grad_y);
    const T* in = static_cast<const T*>(x);
    T* gx = static_cast<T*>(grad_x);
#pragma omp parallel for collapse(2) schedule(static) if (parallel_worth_it(layout))
    for (int64_t n = 0; n < layout.batch; ++n)
      for (int64_t c = 0; c < layout.channels; ++c) {
        const double mu = double(static_cast<const S*>(mean)[c]);
        const double inv = double(static_cast<const S*>(invstd)[c]);
        const double scale = inv * param<T>(weight, c, 1);
        const double mean_dy = sum_dy ? param<T>(sum_dy, c, 0) / double(count) : 0;
        const double mean_dy_xhat = sum_dy ? param<T>(sum_dy_xhat, c, 0) / double(count) : 0;
        const int64_t start = plane_start(layout, n, c), m = valid_values(layout, lengths, n);
        for (int64_t k = 0; k < m; ++k) {
          const double x_hat = (double(in[start + k]) - mu) * inv;
          gx[start + k] = T(scale * (double(gy[start + k]) - mean_dy - x_hat * mean_dy_xhat));
        }
        std::fill(gx + start + m, gx + start + layout.plane(), T(0));
      }
  });
}

}  // namespace sonata::kernels::cpu

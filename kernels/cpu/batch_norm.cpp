// Batch normalisation on the CPU: one OpenMP task per channel, everything accumulated in
// double. Statistics are two-pass (mean, then squared deviations), which is exact enough to
// be the reference the CUDA kernels' one-pass Welford merge is compared against.
#include "kernels/cpu/batch_norm.h"

#include <cmath>
#include <type_traits>

#include "base/nvtx.h"
#include "kernels/cpu/dispatch.h"

namespace sonata::kernels::cpu {
namespace {

// The per-channel arrays' type: double beside f64 data, float beside f32.
template <typename T>
using stat_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

// Calls visit(value_pointer_offset) for every element of channel c, row by row.
template <typename Visit>
inline void for_channel(int64_t batch, int64_t channels, int64_t spatial, int64_t c,
                        Visit&& visit) {
  for (int64_t n = 0; n < batch; ++n) {
    const int64_t row = (n * channels + c) * spatial;
    for (int64_t s = 0; s < spatial; ++s) visit(row + s);
  }
}

bool parallel_worth_it(int64_t batch, int64_t channels, int64_t spatial) {
  return channels > 1 && batch * channels * spatial >= (1 << 14);
}

template <typename T>
double param(const void* values, int64_t c, double fallback) {
  return values ? double(static_cast<const stat_t<T>*>(values)[c]) : fallback;
}

template <typename T>
double relu_masked(const T* grad_y, const T* relu_output, int64_t at) {
  if (relu_output && !(double(relu_output[at]) > 0)) return 0;
  return double(grad_y[at]);
}

}  // namespace

int64_t batch_norm_workspace_size(int64_t, int64_t, int64_t) {
  return 0;
}

void batch_norm_statistics(DType dtype, const void* x, int64_t batch, int64_t channels,
                           int64_t spatial, double eps, double momentum, void* running_mean,
                           void* running_var, void* mean, void* invstd, void*) {
  SONATA_NVTX_RANGE("sonata::cpu::batch_norm_statistics");
  dispatch_float(dtype, "batch_norm_statistics", [&]<typename T>() {
    using S = stat_t<T>;
    const T* in = static_cast<const T*>(x);
    const double count = double(batch * spatial);
#pragma omp parallel for schedule(static) if (parallel_worth_it(batch, channels, spatial))
    for (int64_t c = 0; c < channels; ++c) {
      double total = 0;
      for_channel(batch, channels, spatial, c, [&](int64_t at) { total += double(in[at]); });
      const double mu = total / count;
      double squares = 0;
      for_channel(batch, channels, spatial, c, [&](int64_t at) {
        const double d = double(in[at]) - mu;
        squares += d * d;
      });
      static_cast<S*>(mean)[c] = S(mu);
      static_cast<S*>(invstd)[c] = S(1.0 / std::sqrt(squares / count + eps));
      if (running_mean) {
        S& rm = static_cast<S*>(running_mean)[c];
        S& rv = static_cast<S*>(running_var)[c];
        rm = S((1 - momentum) * double(rm) + momentum * mu);
        rv = S((1 - momentum) * double(rv) + momentum * squares / (count - 1));
      }
    }
  });
}

void batch_norm_apply(DType dtype, const void* x, const void* mean, const void* invstd,
                      const void* weight, const void* bias, int64_t batch, int64_t channels,
                      int64_t spatial, bool relu, void* y) {
  SONATA_NVTX_RANGE("sonata::cpu::batch_norm_apply");
  dispatch_float(dtype, "batch_norm_apply", [&]<typename T>() {
    const T* in = static_cast<const T*>(x);
    T* out = static_cast<T*>(y);
#pragma omp parallel for schedule(static) if (parallel_worth_it(batch, channels, spatial))
    for (int64_t c = 0; c < channels; ++c) {
      const double mu = param<T>(mean, c, 0),
                   scale = param<T>(invstd, c, 1) * param<T>(weight, c, 1);
      const double shift = param<T>(bias, c, 0);
      for_channel(batch, channels, spatial, c, [&](int64_t at) {
        const double value = (double(in[at]) - mu) * scale + shift;
        out[at] = T(relu && !(value > 0) ? 0.0 : value);
      });
    }
  });
}

void batch_norm_backward_reduce(DType dtype, const void* grad_y, const void* x,
                                const void* relu_output, const void* mean, const void* invstd,
                                int64_t batch, int64_t channels, int64_t spatial, void*,
                                void* sum_dy, void* sum_dy_xhat) {
  SONATA_NVTX_RANGE("sonata::cpu::batch_norm_backward_reduce");
  dispatch_float(dtype, "batch_norm_backward_reduce", [&]<typename T>() {
    using S = stat_t<T>;
    const T* gy = static_cast<const T*>(grad_y);
    const T* in = static_cast<const T*>(x);
    const T* relu_y = static_cast<const T*>(relu_output);
#pragma omp parallel for schedule(static) if (parallel_worth_it(batch, channels, spatial))
    for (int64_t c = 0; c < channels; ++c) {
      const double mu = param<T>(mean, c, 0);
      double dy_total = 0, dy_centered = 0;
      for_channel(batch, channels, spatial, c, [&](int64_t at) {
        const double dy = relu_masked(gy, relu_y, at);
        dy_total += dy;
        dy_centered += dy * (double(in[at]) - mu);
      });
      static_cast<S*>(sum_dy)[c] = S(dy_total);
      static_cast<S*>(sum_dy_xhat)[c] = S(dy_centered * param<T>(invstd, c, 1));
    }
  });
}

void batch_norm_backward_input(DType dtype, const void* grad_y, const void* x,
                               const void* relu_output, const void* mean, const void* invstd,
                               const void* weight, const void* sum_dy, const void* sum_dy_xhat,
                               int64_t batch, int64_t channels, int64_t spatial, void* grad_x) {
  SONATA_NVTX_RANGE("sonata::cpu::batch_norm_backward_input");
  dispatch_float(dtype, "batch_norm_backward_input", [&]<typename T>() {
    const T* gy = static_cast<const T*>(grad_y);
    const T* in = static_cast<const T*>(x);
    const T* relu_y = static_cast<const T*>(relu_output);
    T* gx = static_cast<T*>(grad_x);
    const double count = double(batch * spatial);
#pragma omp parallel for schedule(static) if (parallel_worth_it(batch, channels, spatial))
    for (int64_t c = 0; c < channels; ++c) {
      const double mu = param<T>(mean, c, 0), inv = param<T>(invstd, c, 1);
      const double scale = inv * param<T>(weight, c, 1);
      // Batch statistics: the mean and variance depend on x too, which removes the mean of
      // dy and its projection on x_hat (the running-statistics case has neither term).
      const double mean_dy = sum_dy ? param<T>(sum_dy, c, 0) / count : 0;
      const double mean_dy_xhat = sum_dy ? param<T>(sum_dy_xhat, c, 0) / count : 0;
      for_channel(batch, channels, spatial, c, [&](int64_t at) {
        const double x_hat = (double(in[at]) - mu) * inv;
        const double dy = relu_masked(gy, relu_y, at);
        gx[at] = T(scale * (dy - mean_dy - x_hat * mean_dy_xhat));
      });
    }
  });
}

}  // namespace sonata::kernels::cpu

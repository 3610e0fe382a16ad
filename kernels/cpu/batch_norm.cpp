// Batch normalisation on the CPU: one OpenMP task per channel. Elementwise work runs in the
// data's own precision (float for f32, so it vectorises; double for f64), and every sum is
// taken per (image, channel) plane in that precision, then across planes in double.
// Statistics are two-pass (mean, then squared deviations), which is exact enough to be the
// reference the CUDA kernels' one-pass Welford merge is compared against.
#include "kernels/cpu/batch_norm.h"

#include <cmath>
#include <type_traits>

#include "base/nvtx.h"
#include "kernels/cpu/capability_region.h"
#include "kernels/cpu/dispatch.h"

SONATA_CPU_BEGIN
namespace {

// The per-channel arrays' type: double beside f64 data, float beside f32.
template <typename T>
using stat_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

// The start of the (image n, channel c) plane of `spatial` contiguous elements. The kernels
// loop over n themselves: GCC 12 left an `omp simd reduction` over floats scalar when it sat
// in a lambda called per plane (the batch-norm backward took 5.8 ms against PyTorch's 2.6).
inline int64_t plane_start(int64_t n, int64_t channels, int64_t c, int64_t spatial) {
  return (n * channels + c) * spatial;
}

bool parallel_worth_it(int64_t batch, int64_t channels, int64_t spatial) {
  return channels > 1 && batch * channels * spatial >= (1 << 14);
}

template <typename T>
double param(const void* values, int64_t c, double fallback) {
  return values ? double(static_cast<const stat_t<T>*>(values)[c]) : fallback;
}

}  // namespace

int64_t batch_norm_workspace_size(int64_t, int64_t, int64_t) {
  return 0;
}

void batch_norm_statistics(DType dtype, const void* x, int64_t batch, int64_t channels,
                           int64_t spatial, double eps, double momentum, void* running_mean,
                           void* running_var, void* mean, void* invstd, void*) {
  SONATA_NVTX_RANGE("sonata::cpu::batch_norm_statistics");
  dispatch_f32_f64(dtype, "batch_norm_statistics", [&]<typename T>() {
    using S = stat_t<T>;
    const T* in = static_cast<const T*>(x);
    const double count = double(batch * spatial);
#pragma omp parallel for schedule(static) if (parallel_worth_it(batch, channels, spatial))
    for (int64_t c = 0; c < channels; ++c) {
      double total = 0;
      for (int64_t n = 0; n < batch; ++n) {
        const int64_t plane = plane_start(n, channels, c, spatial);
        T sum = 0;
#pragma omp simd reduction(+ : sum)
        for (int64_t s = 0; s < spatial; ++s) sum += in[plane + s];
        total += double(sum);
      }
      const double mu = total / count;
      const T mu_t = T(mu);
      double squares = 0;
      for (int64_t n = 0; n < batch; ++n) {
        const int64_t plane = plane_start(n, channels, c, spatial);
        T sum = 0;
#pragma omp simd reduction(+ : sum)
        for (int64_t s = 0; s < spatial; ++s) {
          const T d = in[plane + s] - mu_t;
          sum += d * d;
        }
        squares += double(sum);
      }
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
  dispatch_f32_f64(dtype, "batch_norm_apply", [&]<typename T>() {
    const T* in = static_cast<const T*>(x);
    T* out = static_cast<T*>(y);
    // A copy local to this lambda: clang 14 refuses the function's own `relu` in a lambda
    // nested in an OpenMP region of a generic lambda.
    const bool clamp = relu;
#pragma omp parallel for schedule(static) if (parallel_worth_it(batch, channels, spatial))
    for (int64_t c = 0; c < channels; ++c) {
      const double scale = param<T>(invstd, c, 1) * param<T>(weight, c, 1);
      const T scale_t = T(scale), mu_t = T(param<T>(mean, c, 0)), shift_t = T(param<T>(bias, c, 0));
      for (int64_t n = 0; n < batch; ++n) {
        const int64_t plane = plane_start(n, channels, c, spatial);
        const T* src = in + plane;
        T* dst = out + plane;
        if (clamp) {
#pragma omp simd
          for (int64_t s = 0; s < spatial; ++s) {
            const T value = (src[s] - mu_t) * scale_t + shift_t;
            dst[s] = value < T(0) ? T(0) : value;  // keeps NaN, as PyTorch's ReLU
          }
        } else {
#pragma omp simd
          for (int64_t s = 0; s < spatial; ++s) dst[s] = (src[s] - mu_t) * scale_t + shift_t;
        }
      }
    }
  });
}

void batch_norm_backward_reduce(DType dtype, const void* grad_y, const void* x,
                                const void* relu_output, const void* mean, const void* invstd,
                                int64_t batch, int64_t channels, int64_t spatial, void*,
                                void* sum_dy, void* sum_dy_xhat) {
  SONATA_NVTX_RANGE("sonata::cpu::batch_norm_backward_reduce");
  dispatch_f32_f64(dtype, "batch_norm_backward_reduce", [&]<typename T>() {
    using S = stat_t<T>;
    const T* gy = static_cast<const T*>(grad_y);
    const T* in = static_cast<const T*>(x);
    const T* relu_y = static_cast<const T*>(relu_output);
#pragma omp parallel for schedule(static) if (parallel_worth_it(batch, channels, spatial))
    for (int64_t c = 0; c < channels; ++c) {
      const T mu = T(param<T>(mean, c, 0));
      double dy_total = 0, dy_centered = 0;
      for (int64_t n = 0; n < batch; ++n) {
        const int64_t plane = plane_start(n, channels, c, spatial);
        T plane_dy = 0, plane_centered = 0;
        const T* g = gy + plane;
        const T* v = in + plane;
        if (relu_y) {  // two loops, so neither tests the pointer per element
          const T* r = relu_y + plane;
#pragma omp simd reduction(+ : plane_dy, plane_centered)
          for (int64_t s = 0; s < spatial; ++s) {
            const T dy = r[s] > T(0) ? g[s] : T(0);
            plane_dy += dy;
            plane_centered += dy * (v[s] - mu);
          }
        } else {
#pragma omp simd reduction(+ : plane_dy, plane_centered)
          for (int64_t s = 0; s < spatial; ++s) {
            plane_dy += g[s];
            plane_centered += g[s] * (v[s] - mu);
          }
        }
        dy_total += double(plane_dy);
        dy_centered += double(plane_centered);
      }
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
  dispatch_f32_f64(dtype, "batch_norm_backward_input", [&]<typename T>() {
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
      // gx = scale * (dy - mean_dy - (x - mu) * inv * mean_dy_xhat), with x - mu and
      // dy - mean_dy formed first: folding mu into one offset cancels catastrophically.
      const T scale_t = T(scale), x_factor_t = T(-scale * inv * mean_dy_xhat), mu_t = T(mu),
              mean_dy_t = T(mean_dy);
      for (int64_t n = 0; n < batch; ++n) {
        const int64_t plane = plane_start(n, channels, c, spatial);
        const T* g = gy + plane;
        const T* v = in + plane;
        T* out = gx + plane;
        if (relu_y) {
          const T* r = relu_y + plane;
#pragma omp simd
          for (int64_t s = 0; s < spatial; ++s)
            out[s] =
                ((r[s] > T(0) ? g[s] : T(0)) - mean_dy_t) * scale_t + (v[s] - mu_t) * x_factor_t;
        } else {
#pragma omp simd
          for (int64_t s = 0; s < spatial; ++s)
            out[s] = (g[s] - mean_dy_t) * scale_t + (v[s] - mu_t) * x_factor_t;
        }
      }
    }
  });
}

SONATA_CPU_END

#if SONATA_CPU_ENTRY_POINTS
// The public functions: each runs the active capability's copy.
namespace sonata::kernels::cpu {

SONATA_CPU_DECLARE(batch_norm_workspace_size)
SONATA_CPU_DECLARE(batch_norm_statistics)
SONATA_CPU_DECLARE(batch_norm_apply)
SONATA_CPU_DECLARE(batch_norm_backward_reduce)
SONATA_CPU_DECLARE(batch_norm_backward_input)

int64_t batch_norm_workspace_size(int64_t batch, int64_t channels, int64_t spatial) {
  return SONATA_CPU_CALL(batch_norm_workspace_size)(batch, channels, spatial);
}

void batch_norm_statistics(DType dtype, const void* x, int64_t batch, int64_t channels,
                           int64_t spatial, double eps, double momentum, void* running_mean,
                           void* running_var, void* mean, void* invstd, void* workspace) {
  SONATA_CPU_CALL(batch_norm_statistics)
  (dtype, x, batch, channels, spatial, eps, momentum, running_mean, running_var, mean, invstd,
   workspace);
}

void batch_norm_apply(DType dtype, const void* x, const void* mean, const void* invstd,
                      const void* weight, const void* bias, int64_t batch, int64_t channels,
                      int64_t spatial, bool relu, void* y) {
  SONATA_CPU_CALL(batch_norm_apply)
  (dtype, x, mean, invstd, weight, bias, batch, channels, spatial, relu, y);
}

void batch_norm_backward_reduce(DType dtype, const void* grad_y, const void* x,
                                const void* relu_output, const void* mean, const void* invstd,
                                int64_t batch, int64_t channels, int64_t spatial, void* workspace,
                                void* sum_dy, void* sum_dy_xhat) {
  SONATA_CPU_CALL(batch_norm_backward_reduce)
  (dtype, grad_y, x, relu_output, mean, invstd, batch, channels, spatial, workspace, sum_dy,
   sum_dy_xhat);
}

void batch_norm_backward_input(DType dtype, const void* grad_y, const void* x,
                               const void* relu_output, const void* mean, const void* invstd,
                               const void* weight, const void* sum_dy, const void* sum_dy_xhat,
                               int64_t batch, int64_t channels, int64_t spatial, void* grad_x) {
  SONATA_CPU_CALL(batch_norm_backward_input)
  (dtype, grad_y, x, relu_output, mean, invstd, weight, sum_dy, sum_dy_xhat, batch, channels,
   spatial, grad_x);
}

}  // namespace sonata::kernels::cpu
#endif

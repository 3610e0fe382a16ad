// Cross entropy on the CPU: one position (a line of `classes` scores, stride `inner`) per
// OpenMP iteration; the exponentials in the data's precision, the loss and the target's
// gradient in double.
#include "kernels/cpu/cross_entropy.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "base/nvtx.h"
#include "kernels/cpu/capability_region.h"
#include "kernels/cpu/dispatch.h"
#include "kernels/cpu/fast_math.h"
#include "kernels/cpu/unit_stride.h"

SONATA_CPU_BEGIN
namespace {

template <typename T>
using stat_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

template <typename T>
double class_weight(const void* weight, int64_t c) {
  return weight ? double(static_cast<const stat_t<T>*>(weight)[c]) : 1.0;
}

template <typename T>
double weight_total(const void* weight, int64_t classes) {
  double total = 0;
  for (int64_t c = 0; c < classes; ++c) total += class_weight<T>(weight, c);
  return total;
}

bool parallel_worth_it(int64_t positions, int64_t classes) {
  return positions > 1 && positions * classes >= (1 << 14);
}

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

}  // namespace

void cross_entropy_forward(DType dtype, const void* scores, const int64_t* target,
                           const void* weight, int64_t outer, int64_t classes, int64_t inner,
                           int64_t ignore_index, double label_smoothing, bool normalize, void* loss,
                           void* target_weight, void* log_sum_exp) {
  SONATA_NVTX_RANGE("sonata::cpu::cross_entropy_forward");
  dispatch_f32_f64(dtype, "cross_entropy_forward", [&]<typename T>() {
    using S = stat_t<T>;
    using M = S;  // the exponentials in the data's precision
    const T* all = static_cast<const T*>(scores);
    const int64_t positions = outer * inner;
    const double s = label_smoothing;
    with_unit_stride(inner, [&](auto stride) {
#pragma omp parallel for schedule(static) if (parallel_worth_it(positions, classes))
      for (int64_t at = 0; at < positions; ++at) {
        const T* z = all + (at / inner) * classes * inner + at % inner;
        // log-probability = (z - peak) - log_total; peak + log_total would round away the
        // low digits of a large peak (kernels/cpu/cross_entropy.h).
        double peak = 0, log_total = 0;
        if (normalize) {
          // In the data's precision: float lanes are twice as many as double ones, and
          // exp_f32 is within a few ulp of expf, as PyTorch's vectorised log_softmax.
          M peak_m = -std::numeric_limits<M>::infinity();
#pragma omp simd reduction(max : peak_m)
          for (int64_t c = 0; c < classes; ++c) peak_m = std::max(peak_m, M(z[c * stride]));
          if (std::isinf(peak_m) && peak_m < 0) peak_m = 0;
          // exp_or_zero, not std::exp: glibc's is a scalar call, and this loop is the whole op.
          M total = 0;
#pragma omp simd reduction(+ : total)
          for (int64_t c = 0; c < classes; ++c) total += exp_or_zero(M(z[c * stride]) - peak_m);
          peak = double(peak_m);
          log_total = std::log(double(total));
        }
        static_cast<S*>(log_sum_exp)[2 * at] = S(peak);
        static_cast<S*>(log_sum_exp)[2 * at + 1] = S(log_total);
        auto log_probability = [&](int64_t c) {
          return (double(z[c * stride]) - peak) - log_total;
        };
        const int64_t t = target[at];
        double value = 0, w_t = 0;
        if (t != ignore_index && (t < 0 || t >= classes)) {
          value = w_t = kNaN;
        } else if (t != ignore_index) {
          w_t = class_weight<T>(weight, t);
          value = (1 - s) * -w_t * log_probability(t);
          if (s > 0) {
            double smooth = 0;
            for (int64_t c = 0; c < classes; ++c)
              smooth -= class_weight<T>(weight, c) * log_probability(c);
            value += s / double(classes) * smooth;
          }
        }
        static_cast<S*>(loss)[at] = S(value);
        static_cast<S*>(target_weight)[at] = S(w_t);
      }
    });
  });
}

void cross_entropy_backward(DType dtype, const void* grad_loss, const void* scores,
                            const int64_t* target, const void* weight, const void* log_sum_exp,
                            int64_t outer, int64_t classes, int64_t inner, int64_t ignore_index,
                            double label_smoothing, bool normalize, void* grad_scores) {
  SONATA_NVTX_RANGE("sonata::cpu::cross_entropy_backward");
  dispatch_f32_f64(dtype, "cross_entropy_backward", [&]<typename T>() {
    using S = stat_t<T>;
    using M = S;  // the exponentials in the data's precision
    const T* all = static_cast<const T*>(scores);
    T* grad_all = static_cast<T*>(grad_scores);
    const int64_t positions = outer * inner;
    const double s = label_smoothing, smooth_share = s / double(classes);
    const double all_weights = weight_total<T>(weight, classes);
    with_unit_stride(inner, [&](auto stride) {
#pragma omp parallel for schedule(static) if (parallel_worth_it(positions, classes))
      for (int64_t at = 0; at < positions; ++at) {
        const int64_t line = (at / inner) * classes * inner + at % inner;
        const T* z = all + line;
        T* gz = grad_all + line;
        const int64_t t = target[at];
        if (t == ignore_index) {
          for (int64_t c = 0; c < classes; ++c) gz[c * stride] = T(0);
          continue;
        }
        const bool valid = t >= 0 && t < classes;
        const double g = valid ? double(static_cast<const S*>(grad_loss)[at]) : kNaN;
        const double w_t = valid ? class_weight<T>(weight, t) : kNaN;
        const double peak = double(static_cast<const S*>(log_sum_exp)[2 * at]);
        const double log_total = double(static_cast<const S*>(log_sum_exp)[2 * at + 1]);
        // The softmax term collects every class's share of the target distribution's weight.
        const double p_coefficient = normalize ? (1 - s) * w_t + smooth_share * all_weights : 0;
        // Every class first as if it were not the target, in the data's precision and with
        // the weight's branch outside the loop (both kept it scalar: 5 ms for [1024, 1000]);
        // then the target's own entry again in double.
        const M p_scale = M(g * p_coefficient), smooth_scale = M(g * smooth_share);
        const M peak_m = M(peak), log_total_m = M(log_total);
        const auto* w = static_cast<const S*>(weight);
        if (normalize && w) {
#pragma omp simd
          for (int64_t c = 0; c < classes; ++c)
            gz[c * stride] = T(p_scale * exp_or_zero((M(z[c * stride]) - peak_m) - log_total_m) -
                               smooth_scale * M(w[c]));
        } else if (normalize) {
#pragma omp simd
          for (int64_t c = 0; c < classes; ++c)
            gz[c * stride] =
                T(p_scale * exp_or_zero((M(z[c * stride]) - peak_m) - log_total_m) - smooth_scale);
        } else {
#pragma omp simd
          for (int64_t c = 0; c < classes; ++c)
            gz[c * stride] = T(-smooth_scale * (w ? M(w[c]) : M(1)));
        }
        if (valid) {
          const double p_t = normalize ? std::exp((double(z[t * stride]) - peak) - log_total) : 0;
          gz[t * stride] = T(g * (p_t * p_coefficient - (1 - s) * w_t - smooth_share * w_t));
        }
      }
    });
  });
}

SONATA_CPU_END

#if SONATA_CPU_ENTRY_POINTS
// The public functions: each runs the active capability's copy.
namespace sonata::kernels::cpu {

SONATA_CPU_DECLARE(cross_entropy_forward)
SONATA_CPU_DECLARE(cross_entropy_backward)

void cross_entropy_forward(DType dtype, const void* scores, const int64_t* target,
                           const void* weight, int64_t outer, int64_t classes, int64_t inner,
                           int64_t ignore_index, double label_smoothing, bool normalize, void* loss,
                           void* target_weight, void* log_sum_exp) {
  SONATA_CPU_CALL(cross_entropy_forward)
  (dtype, scores, target, weight, outer, classes, inner, ignore_index, label_smoothing, normalize,
   loss, target_weight, log_sum_exp);
}

void cross_entropy_backward(DType dtype, const void* grad_loss, const void* scores,
                            const int64_t* target, const void* weight, const void* log_sum_exp,
                            int64_t outer, int64_t classes, int64_t inner, int64_t ignore_index,
                            double label_smoothing, bool normalize, void* grad_scores) {
  SONATA_CPU_CALL(cross_entropy_backward)
  (dtype, grad_loss, scores, target, weight, log_sum_exp, outer, classes, inner, ignore_index,
   label_smoothing, normalize, grad_scores);
}

}  // namespace sonata::kernels::cpu
#endif

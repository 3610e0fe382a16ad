// Cross entropy on the line walkers of lines.cuh: each position's `classes` scores form one
// line (a warp or a block per row when inner == 1, 32 neighbouring positions per block
// otherwise). The forward reads the line once for the max and exp-sum together
// (online_softmax.cuh), once more only with label smoothing (the weighted sum of shifted
// scores), and keeps only the max and the shifted log-sum per position, so the backward
// rebuilds the softmax from one more read instead of a saved [N, C] tensor. Rows whose
// pointers allow it are read (and the gradient written) in 16-byte packs.
#include "kernels/cuda/cross_entropy.h"

#include <cmath>
#include <limits>

#include "base/nvtx.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/lines.cuh"
#include "kernels/cuda/online_softmax.cuh"

namespace sonata::kernels::cuda {
namespace {

template <typename A>
struct Add {
  __device__ A operator()(A a, A b) const { return a + b; }
};

template <typename A>
__device__ __forceinline__ A class_weight(const A* weight, int64_t c) {
  return weight ? weight[c] : A(1);
}

// Every uniform branch below (normalize, smoothing) is taken by all threads of a line, so
// the allreduce calls stay matched.
template <typename T>
struct ForwardLine {
  using A = float_compute_t<T>;
  const T* scores;
  const int64_t* target;
  const A* weight;
  int64_t classes, ignore_index;
  A smoothing;
  bool normalize;
  A* loss;
  A* target_weight;
  A* log_sum_exp;
  bool packed;  // rows in 16-byte packs (lines.cuh rows_fit_packs)

  template <typename AllReduce>
  __device__ void operator()(int64_t line, int64_t base, int64_t stride, int first, int step,
                             bool valid, AllReduce allreduce) const {
    const T* z = scores + base;
    // Max and sum of exponentials in one read (online_softmax.cuh).
    MaxSum<A> stats{A(0), A(1)};  // nll_loss: log(1) = 0, no shift
    if (normalize) {
      stats = MaxSum<A>::empty();
      if (valid)
        for_line_values(z, static_cast<const T*>(nullptr), classes, stride, first, step, packed,
                        [&](int64_t, A value, A) { stats.add(value); });
      stats = allreduce(stats, MergeMaxSum<A>{});
    }
    const A peak = stats.max == -std::numeric_limits<A>::infinity() ? A(0) : stats.max;
    // Label smoothing reads the line once more, shifted by the final peak:
    // sum_c w_c * (z_c - lse) = weighted - (lse - peak) * weight_sum keeps the term free of
    // cancellation between large scores and lse.
    A weighted = A(0), weight_sum = A(0);
    if (smoothing > A(0)) {
      if (valid)
        for_line_values(z, static_cast<const T*>(nullptr), classes, stride, first, step, packed,
                        [&](int64_t c, A value, A) {
                          const A w = class_weight(weight, c);
                          weighted += w * (value - peak);
                          weight_sum += w;
                        });
      weighted = allreduce(weighted, Add<A>{});
      weight_sum = allreduce(weight_sum, Add<A>{});
    }
    if (!valid || first != 0) return;  // one thread per line writes
    // Kept apart (kernels/cpu/cross_entropy.h): peak + lse_shift would round away the low
    // digits of a large peak, and the backward's p with them.
    const A lse_shift = log(stats.sum);
    log_sum_exp[2 * line] = peak;
    log_sum_exp[2 * line + 1] = lse_shift;
    const int64_t t = target[line];
    A value = A(0), w_t = A(0);
    if (t != ignore_index && (t < 0 || t >= classes)) {
      value = w_t = std::numeric_limits<A>::quiet_NaN();
    } else if (t != ignore_index) {
      w_t = class_weight(weight, t);
      value = (A(1) - smoothing) * -w_t * ((A(load(z[t * stride])) - peak) - lse_shift);
      if (smoothing > A(0)) value += smoothing / A(classes) * -(weighted - lse_shift * weight_sum);
    }
    loss[line] = value;
    target_weight[line] = w_t;
  }
};

template <typename T>
struct BackwardLine {
  using A = float_compute_t<T>;
  const A* grad_loss;
  const T* scores;
  const int64_t* target;
  const A* weight;
  const A* log_sum_exp;
  int64_t classes, ignore_index;
  A smoothing;
  bool normalize;
  T* grad_scores;
  bool packed;  // rows in 16-byte packs (lines.cuh rows_fit_packs)

  template <typename AllReduce>
  __device__ void operator()(int64_t line, int64_t base, int64_t stride, int first, int step,
                             bool valid, AllReduce allreduce) const {
    const A smooth_share = smoothing / A(classes);
    // sum_k w_k, needed only where smoothing spreads weight over every class.
    A all_weights = A(classes);
    if (weight && smoothing > A(0) && normalize) {
      A partial = A(0);
      if (valid)
        for (int64_t c = first; c < classes; c += step) partial += weight[c];
      all_weights = allreduce(partial, Add<A>{});
    }
    if (!valid) return;
    const T* z = scores + base;
    T* gz = grad_scores + base;
    const int64_t t = target[line];
    if (t == ignore_index) {
      for (int64_t c = first; c < classes; c += step) gz[c * stride] = store<T>(A(0));
      return;
    }
    const bool in_range = t >= 0 && t < classes;
    const A nan = std::numeric_limits<A>::quiet_NaN();
    const A g = in_range ? grad_loss[line] : nan;
    const A w_t = in_range ? class_weight(weight, t) : nan;
    const A peak = log_sum_exp[2 * line], lse_shift = log_sum_exp[2 * line + 1];
    const A p_coefficient =
        normalize ? (A(1) - smoothing) * w_t + smooth_share * all_weights : A(0);
    map_line_values(z, static_cast<const T*>(nullptr), gz, classes, stride, first, step, packed,
                    [&](int64_t c, A score, A) {
                      const A p = normalize ? exp((score - peak) - lse_shift) : A(0);
                      const A hit = c == t ? (A(1) - smoothing) * w_t : A(0);
                      return g * (p * p_coefficient - hit - smooth_share * class_weight(weight, c));
                    });
  }
};

}  // namespace

void cross_entropy_forward(DType dtype, const void* scores, const int64_t* target,
                           const void* weight, int64_t outer, int64_t classes, int64_t inner,
                           int64_t ignore_index, double label_smoothing, bool normalize, void* loss,
                           void* target_weight, void* log_sum_exp, cudaStream_t stream) {
  SONATA_NVTX_RANGE("sonata::cuda::cross_entropy_forward");
  dispatch_f16_bf16_f32_f64(dtype, "cross_entropy_forward", [&]<typename T>() {
    using A = float_compute_t<T>;
    launch_lines(
        outer, classes, inner, stream,
        ForwardLine<T>{static_cast<const T*>(scores), target, static_cast<const A*>(weight),
                       classes, ignore_index, A(label_smoothing), normalize, static_cast<A*>(loss),
                       static_cast<A*>(target_weight), static_cast<A*>(log_sum_exp),
                       rows_fit_packs<T>(classes, inner, {scores})});
    CUDA_CHECK_LAUNCH();
  });
}

void cross_entropy_backward(DType dtype, const void* grad_loss, const void* scores,
                            const int64_t* target, const void* weight, const void* log_sum_exp,
                            int64_t outer, int64_t classes, int64_t inner, int64_t ignore_index,
                            double label_smoothing, bool normalize, void* grad_scores,
                            cudaStream_t stream) {
  SONATA_NVTX_RANGE("sonata::cuda::cross_entropy_backward");
  dispatch_f16_bf16_f32_f64(dtype, "cross_entropy_backward", [&]<typename T>() {
    using A = float_compute_t<T>;
    launch_lines(
        outer, classes, inner, stream,
        BackwardLine<T>{static_cast<const A*>(grad_loss), static_cast<const T*>(scores), target,
                        static_cast<const A*>(weight), static_cast<const A*>(log_sum_exp), classes,
                        ignore_index, A(label_smoothing), normalize, static_cast<T*>(grad_scores),
                        rows_fit_packs<T>(classes, inner, {scores, grad_scores})});
    CUDA_CHECK_LAUNCH();
  });
}

}  // namespace sonata::kernels::cuda

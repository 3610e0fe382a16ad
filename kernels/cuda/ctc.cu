// CTC loss on CUDA. Recursions: one block per sample looping over t, its threads covering
// the 2L+1 extended-label states (several each when the block is smaller), one
// __syncthreads per step (two with the row shift); alpha and beta live in the engine's
// workspace, so any L works. When the loss will be differentiated, beta runs in the
// forward's launch beside alpha (kernels/common/ctc_plan.h), so a sample's two serial chains
// overlap. Gradient: one warp per (t, n) row of C classes. Half types and f32 accumulate in
// float, f64 in double.
#include "kernels/cuda/ctc.h"

#include <cmath>
#include <limits>

#include "base/nvtx.h"
#include "kernels/common/ctc_plan.h"
#include "kernels/cuda/launch.cuh"

namespace sonata::kernels::cuda {
namespace {

static_assert(kCtcWarpSize == kWarpSize);
constexpr int kMaxRecursionWarps = kCtcMaxRecursionThreads / kWarpSize;

template <typename A>
__device__ __forceinline__ A negative_infinity() {
  return -std::numeric_limits<A>::infinity();
}

// log(exp(a) + exp(b) + exp(c)); an all -inf triple gives -inf rather than NaN.
template <typename A>
__device__ __forceinline__ A log_add3(A a, A b, A c) {
  A peak = fmax(fmax(a, b), c);
  if (peak == negative_infinity<A>()) peak = A(0);
  return log(exp(a - peak) + exp(b - peak) + exp(c - peak)) + peak;
}

// One sample's targets and lengths, and its extended label sequence l'.
struct SampleTargets {
  const int64_t* labels;
  int64_t input_length, target_length, blank;

  __device__ SampleTargets(const CtcTargets& targets, int64_t n, int64_t blank_label)
      : labels(targets.labels + targets.label_offsets[n]),
        input_length(targets.input_lengths[n]),
        target_length(targets.target_lengths[n]),
        blank(blank_label) {}

  __device__ int64_t states() const { return 2 * target_length + 1; }
  __device__ int64_t label(int64_t s) const { return s % 2 == 0 ? blank : labels[s / 2]; }
};

template <typename A>
struct Max {
  __device__ A operator()(A a, A b) const { return fmax(a, b); }
};
template <typename A>
struct Add {
  __device__ A operator()(A a, A b) const { return a + b; }
};

// The maximum of every thread's `value` over the block (blockDim a multiple of 32). The
// caller puts a __syncthreads between one call's return and the next call.
template <typename A>
__device__ A block_max(A value, A* warp_maxima) {
  value = warp_allreduce(value, Max<A>{});
  if (threadIdx.x % kWarpSize == 0) warp_maxima[threadIdx.x / kWarpSize] = value;
  __syncthreads();
  A peak = warp_maxima[0];
  for (unsigned w = 1; w < blockDim.x / kWarpSize; ++w) peak = fmax(peak, warp_maxima[w]);
  return peak;
}

// Why the rows are shifted: unshifted, alpha_t reaches -3t or so, and float rounding of
// numbers in the thousands (ulp ~1e-4), compounded over t, would cost the posterior
// (exp(alpha + beta - ...)) several digits on long utterances. Each stored row is therefore
// shifted by its own maximum (its largest state is 0); the forward adds the shifts up in
// double for the likelihood, and the gradient normalises each row's posterior by its own
// total (sum_s alpha_t(s) beta_t(s) / y_t(l'_s) = p(target) at every t), so the shifts cancel.
template <typename A>
__device__ A shift_row(A* row, int64_t states, A local_max, A* warp_maxima) {
  A peak = block_max(local_max, warp_maxima);
  if (peak == negative_infinity<A>()) peak = A(0);  // an unreachable row stays -inf
  for (int64_t s = threadIdx.x; s < states; s += blockDim.x) row[s] -= peak;
  return peak;
}

// alpha_t(s) = log_add(alpha_{t-1}(s), alpha_{t-1}(s-1), alpha_{t-1}(s-2) when l'_s differs
// from l'_{s-2}) + lp[t, l'_s], each row then shifted (see shift_row). The previous row is
// read from global memory after the barrier that ends the step writing it (visible
// block-wide; not through the read-only path). Called by a whole block (it has barriers).
template <typename T, typename A>
__device__ void alpha_recursion(int64_t n, const T* __restrict__ log_probs,
                                const CtcTargets& targets, const CtcProblem& problem, A* log_alpha,
                                A* neg_log_likelihood, A* loss, A* warp_maxima) {
  const SampleTargets sample(targets, n, problem.blank);
  const int64_t states = sample.states();
  const int64_t row_stride = problem.batch * problem.classes;
  const T* lp = log_probs + n * problem.classes;
  A* alpha = log_alpha + n * problem.max_time * problem.max_states;
  const A neg_inf = negative_infinity<A>();
  double log_scale = 0;  // the sum of the shifts (kept by thread 0)

  if (sample.input_length > 0) {
    A local_max = neg_inf;
    for (int64_t s = threadIdx.x; s < states; s += blockDim.x) {
      alpha[s] = s < 2 ? load(lp[sample.label(s)]) : neg_inf;
      local_max = fmax(local_max, alpha[s]);
    }
    log_scale += shift_row(alpha, states, local_max, warp_maxima);
    for (int64_t t = 1; t < sample.input_length; ++t) {
      __syncthreads();
      const A* previous = alpha + (t - 1) * problem.max_states;
      A* current = alpha + t * problem.max_states;
      const T* lp_t = lp + t * row_stride;
      local_max = neg_inf;
      for (int64_t s = threadIdx.x; s < states; s += blockDim.x) {
        const int64_t label = sample.label(s);
        const A advance = s > 0 ? previous[s - 1] : neg_inf;
        const A skip = s > 1 && sample.label(s - 2) != label ? previous[s - 2] : neg_inf;
        current[s] = log_add3(previous[s], advance, skip) + load(lp_t[label]);
        local_max = fmax(local_max, current[s]);
      }
      log_scale += shift_row(current, states, local_max, warp_maxima);
    }
    __syncthreads();
  }
  if (threadIdx.x != 0) return;
  A nll;
  if (sample.input_length == 0) {
    nll = sample.target_length == 0 ? A(0) : -neg_inf;
  } else {
    const A* final_row = alpha + (sample.input_length - 1) * problem.max_states;
    // An empty target has one state, so no second path end to merge.
    const A log_end = sample.target_length == 0
                          ? final_row[0]
                          : log_add3(final_row[states - 1], final_row[states - 2], neg_inf);
    nll = A(-(double(log_end) + log_scale));
  }
  neg_log_likelihood[n] = nll;
  loss[n] = problem.zero_infinity && nll == -neg_inf ? A(0) : nll;
}

// beta_t(s) = log_add(beta_{t+1}(s), beta_{t+1}(s+1), beta_{t+1}(s+2) when l'_s differs from
// l'_{s+2}) + lp[t, l'_s], from beta_{T_n-1} = lp at the two final states; rows shifted as
// alpha's (the gradient needs no scale). It runs beside alpha, before the likelihood is
// known, so a sample that zero_infinity will zero gets its beta too (all -inf rows are
// harmless: shift_row keeps them); the gradient kernel never reads it. Called by a whole
// block.
template <typename T, typename A>
__device__ void beta_recursion(int64_t n, const T* __restrict__ log_probs,
                               const CtcTargets& targets, const CtcProblem& problem, A* log_beta,
                               A* warp_maxima) {
  const SampleTargets sample(targets, n, problem.blank);
  const A neg_inf = negative_infinity<A>();
  if (sample.input_length == 0) return;  // no rows, no gradient
  const int64_t states = sample.states();
  const int64_t row_stride = problem.batch * problem.classes;
  const T* lp = log_probs + n * problem.classes;
  A* beta = log_beta + n * problem.max_time * problem.max_states;
  const int64_t last = sample.input_length - 1;

  A* final_row = beta + last * problem.max_states;
  A local_max = neg_inf;
  for (int64_t s = threadIdx.x; s < states; s += blockDim.x) {
    final_row[s] = s >= states - 2 ? load(lp[last * row_stride + sample.label(s)]) : neg_inf;
    local_max = fmax(local_max, final_row[s]);
  }
  shift_row(final_row, states, local_max, warp_maxima);
  for (int64_t t = last - 1; t >= 0; --t) {
    __syncthreads();
    const A* next = beta + (t + 1) * problem.max_states;
    A* current = beta + t * problem.max_states;
    const T* lp_t = lp + t * row_stride;
    local_max = neg_inf;
    for (int64_t s = threadIdx.x; s < states; s += blockDim.x) {
      const int64_t label = sample.label(s);
      const A advance = s < states - 1 ? next[s + 1] : neg_inf;
      const A skip = s < states - 2 && sample.label(s + 2) != label ? next[s + 2] : neg_inf;
      current[s] = log_add3(next[s], advance, skip) + load(lp_t[label]);
      local_max = fmax(local_max, current[s]);
    }
    shift_row(current, states, local_max, warp_maxima);
  }
}

// Evaluation: block n runs sample n's alpha. The bounds keep the registers within what a
// plan's largest block needs to launch at all.
template <typename T, typename A>
__global__ void __launch_bounds__(kCtcMaxRecursionThreads)
    ctc_alpha_kernel(const T* __restrict__ log_probs, CtcTargets targets, CtcProblem problem,
                     A* log_alpha, A* neg_log_likelihood, A* loss) {
  __shared__ A warp_maxima[kMaxRecursionWarps];
  alpha_recursion<T, A>(blockIdx.x, log_probs, targets, problem, log_alpha, neg_log_likelihood,
                        loss, warp_maxima);
}

// Training: blocks [0, N) run alpha, blocks [N, 2N) beta, of the same samples. The branch is
// per block, so every barrier inside is reached by all of its threads; the two halves share
// nothing (each writes its own workspace and reads only log_probs and the targets).
template <typename T, typename A>
__global__ void __launch_bounds__(kCtcMaxRecursionThreads)
    ctc_alpha_beta_kernel(const T* __restrict__ log_probs, CtcTargets targets, CtcProblem problem,
                          A* log_alpha, A* log_beta, A* neg_log_likelihood, A* loss) {
  __shared__ A warp_maxima[kMaxRecursionWarps];
  const int64_t block = blockIdx.x;
  if (block < problem.batch)
    alpha_recursion<T, A>(block, log_probs, targets, problem, log_alpha, neg_log_likelihood, loss,
                          warp_maxima);
  else
    beta_recursion<T, A>(block - problem.batch, log_probs, targets, problem, log_beta, warp_maxima);
}

// grad[t,n,c] = (exp(lp) - posterior(t,c)) * grad_loss[n], PyTorch's formula, with the
// posterior sum_{s: l'_s = c} alpha_t(s) beta_t(s) / (y_t(c) p) taken in linear space and p
// replaced by the row's own sum over all states (equal in exact arithmetic; see shift_row).
// Classes gather their states through the label -> positions index (no atomics, so the
// result is deterministic); the blank's L+1 states and the row total are warp reductions.
// `threads` is 32 per (t, n) row.
template <typename T, typename A>
__global__ void ctc_gradient_kernel(int64_t threads, const A* __restrict__ grad_loss,
                                    const T* __restrict__ log_probs, CtcTargets targets,
                                    CtcProblem problem, const A* __restrict__ log_alpha,
                                    const A* __restrict__ log_beta,
                                    const A* __restrict__ neg_log_likelihood, T* grad) {
  const int64_t rows = threads / kWarpSize;
  const int lane = int(threadIdx.x % kWarpSize);
  const int64_t classes = problem.classes;
  const A inf = std::numeric_limits<A>::infinity();
  // Whole warps share a row, so the loop condition and the shuffles are warp-uniform.
  for (int64_t row = thread_index() / kWarpSize; row < rows; row += thread_count() / kWarpSize) {
    const int64_t t = row / problem.batch, n = row % problem.batch;
    const T* lp = log_probs + row * classes;
    T* out = grad + row * classes;
    const SampleTargets sample(targets, n, problem.blank);
    const A nll = neg_log_likelihood[n];
    if (t >= sample.input_length || (problem.zero_infinity && nll == inf)) {
      for (int64_t c = lane; c < classes; c += kWarpSize) out[c] = store<T>(A(0));
      continue;
    }
    const int64_t states = sample.states();
    const int64_t workspace = (n * problem.max_time + t) * problem.max_states;
    const A* alpha = log_alpha + workspace;
    const A* beta = log_beta + workspace;
    const A gr = grad_loss[n];

    // log(alpha_t(s) beta_t(s) / y_t(l'_s)), up to the row's shifts.
    auto log_mass = [&](int64_t s) { return alpha[s] + beta[s] - load(lp[sample.label(s)]); };
    A peak = -inf;
    for (int64_t s = lane; s < states; s += kWarpSize) peak = fmax(peak, log_mass(s));
    peak = warp_allreduce(peak, Max<A>{});
    if (peak == -inf) peak = A(0);  // no path at all: the total is 0 and the posterior NaN
    A total = A(0), blank_mass = A(0);
    for (int64_t s = lane; s < states; s += kWarpSize) {
      const A mass = exp(log_mass(s) - peak);
      total += mass;
      if (s % 2 == 0) blank_mass += mass;
    }
    total = warp_allreduce(total, Add<A>{});
    blank_mass = warp_allreduce(blank_mass, Add<A>{});

    const int64_t* positions = targets.class_positions + targets.label_offsets[n];
    const int64_t* starts = targets.class_starts + n * (classes + 1);
    for (int64_t c = lane; c < classes; c += kWarpSize) {
      const A lp_c = load(lp[c]);
      A mass = A(0);
      if (c == problem.blank) {
        mass = blank_mass;
      } else {
        for (int64_t k = starts[c]; k < starts[c + 1]; ++k) {
          const int64_t s = 2 * positions[k] + 1;
          mass += exp(alpha[s] + beta[s] - lp_c - peak);
        }
      }
      // PyTorch's exp(log_sum + nll - lp) is NaN on every class when nll is +inf.
      const A posterior = nll == inf ? std::numeric_limits<A>::quiet_NaN() : mass / total;
      out[c] = store<T>((exp(lp_c) - posterior) * gr);
    }
  }
}

}  // namespace

void ctc_loss_forward(DType dtype, const void* log_probs, const CtcTargets& targets,
                      const CtcProblem& problem, void* log_alpha, void* log_beta,
                      void* neg_log_likelihood, void* loss, cudaStream_t stream) {
  SONATA_NVTX_RANGE("sonata::cuda::ctc_loss_forward");
  const CtcRecursionPlan plan =
      plan_ctc_recursions(problem.batch, problem.max_states, log_beta != nullptr);
  if (plan.blocks == 0) return;
  dispatch_f16_bf16_f32_f64(dtype, "ctc_loss_forward", [&]<typename T>() {
    using A = float_compute_t<T>;
    const T* lp = static_cast<const T*>(log_probs);
    A* alpha = static_cast<A*>(log_alpha);
    A* nll = static_cast<A*>(neg_log_likelihood);
    A* losses = static_cast<A*>(loss);
    if (plan.beta_in_forward)
      launch(ctc_alpha_beta_kernel<T, A>, unsigned(plan.blocks), plan.threads, 0, stream, lp,
             targets, problem, alpha, static_cast<A*>(log_beta), nll, losses);
    else
      launch(ctc_alpha_kernel<T, A>, unsigned(plan.blocks), plan.threads, 0, stream, lp, targets,
             problem, alpha, nll, losses);
    CUDA_CHECK_LAUNCH();
  });
}

void ctc_loss_backward(DType dtype, const void* grad_loss, const void* log_probs,
                       const CtcTargets& targets, const CtcProblem& problem, const void* log_alpha,
                       const void* log_beta, const void* neg_log_likelihood, void* grad_log_probs,
                       cudaStream_t stream) {
  SONATA_NVTX_RANGE("sonata::cuda::ctc_loss_backward");
  if (problem.batch == 0) return;
  dispatch_f16_bf16_f32_f64(dtype, "ctc_loss_backward", [&]<typename T>() {
    using A = float_compute_t<T>;
    // One warp per (t, n) row, the rows independent: T * N warps, no serial chain even for
    // one utterance (a few hundred frames: dozens of 8-warp blocks, each row C + 2L + 1 work).
    linear_kernel(ctc_gradient_kernel<T, A>, 0, stream,
                  problem.max_time * problem.batch * kWarpSize, static_cast<const A*>(grad_loss),
                  static_cast<const T*>(log_probs), targets, problem,
                  static_cast<const A*>(log_alpha), static_cast<const A*>(log_beta),
                  static_cast<const A*>(neg_log_likelihood), static_cast<T*>(grad_log_probs));
    CUDA_CHECK_LAUNCH();
  });
}

}  // namespace sonata::kernels::cuda

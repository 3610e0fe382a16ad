// CPU reference of the CTC loss: one sample per OpenMP iteration, everything in double,
// loops written as PyTorch's LossCTC.cpp writes them so the two agree to rounding. exp and
// log are kernels/cpu/fast_math.h's (about 1 ulp): glibc's took 78 % of the time.
#include "kernels/cpu/ctc.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "base/nvtx.h"
#include "kernels/cpu/capability_region.h"
#include "kernels/cpu/dispatch.h"
#include "kernels/cpu/fast_math.h"

SONATA_CPU_BEGIN
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();
constexpr double kInf = std::numeric_limits<double>::infinity();

// log(exp(a) + exp(b) + exp(c)) with PyTorch's guard: an all -inf triple gives -inf, not NaN.
// The largest term is exp(0) = 1 and is not computed: two exps and a log per state, not
// three. Written as selects, without branches, so that the recursions' loops over states
// vectorise (with a branch GCC left them scalar: "control flow in loop").
double log_add3(double a, double b, double c) {
  const double high_ab = std::max(a, b), low_ab = std::min(a, b);
  const double top = std::max(high_ab, c), middle = std::min(high_ab, c);
  const bool none = top == kNegInf;
  const double peak = none ? 0.0 : top;
  return log_f64((none ? 0.0 : 1.0) + exp_f64(middle - peak) + exp_f64(low_ab - peak)) + peak;
}

// One sample's view of the batch: its log-probabilities, labels and workspace rows.
template <typename T>
struct Sample {
  const T* log_probs;
  const int64_t* labels;
  int64_t n, batch, classes, max_states, blank;
  int64_t input_length, target_length;

  Sample(const T* lp, const CtcTargets& targets, const CtcProblem& problem, int64_t sample)
      : log_probs(lp),
        labels(targets.labels + targets.label_offsets[sample]),
        n(sample),
        batch(problem.batch),
        classes(problem.classes),
        max_states(problem.max_states),
        blank(problem.blank),
        input_length(targets.input_lengths[sample]),
        target_length(targets.target_lengths[sample]) {}

  int64_t states() const { return 2 * target_length + 1; }
  // The extended label sequence l': blanks at even states, the target at odd ones.
  int64_t label(int64_t s) const { return s % 2 == 0 ? blank : labels[s / 2]; }
  double lp(int64_t t, int64_t c) const { return double(log_probs[(t * batch + n) * classes + c]); }
};

// A sample's extended labels as arrays, so that the recursions' loops over states are
// branch-free (and vectorise): label[s] = l'_s, and skip_bias[s] is 0 where state s can be
// reached from s - 2 (the labels differ, so the blank between them may be skipped) and -inf
// where not, added to the s - 2 term. (As bytes, the flags made GCC pick 64 states per vector
// iteration, so a lattice of 81 states ran its scalar tail: doubles give 8 per zmm.)
struct Lattice {
  std::vector<int64_t> label;
  std::vector<double> skip_bias;

  template <typename T>
  explicit Lattice(const Sample<T>& x)
      : label(size_t(x.states())), skip_bias(size_t(x.states()), kNegInf) {
    for (int64_t s = 0; s < x.states(); ++s) {
      label[size_t(s)] = x.label(s);
      if (s > 1 && x.label(s - 2) != x.label(s)) skip_bias[size_t(s)] = 0.0;
    }
  }
};

// emit[s] = log-probability of l'_s in row lp_row, as doubles: gathered apart from the
// recursion, whose loop GCC left scalar for float rows (a float gather by 64-bit index
// converted to double inside the log-add loop).
template <typename T>
void gather_emissions(const T* lp_row, const int64_t* label, int64_t states, double* emit) {
  for (int64_t s = 0; s < states; ++s) emit[s] = double(lp_row[label[s]]);
}

template <typename T>
double forward_sample(const Sample<T>& x, const Lattice& lattice, double* alpha) {
  if (x.input_length == 0) return x.target_length == 0 ? 0.0 : kInf;
  const int64_t states = x.states(), last = x.input_length - 1;
  double* row = alpha;
  std::fill(row, row + states, kNegInf);
  row[0] = x.lp(0, x.blank);
  if (x.target_length > 0) row[1] = x.lp(0, x.label(1));
  const int64_t* label = lattice.label.data();
  const double* skip_bias = lattice.skip_bias.data();
  std::vector<double> emissions(static_cast<size_t>(states));
  double* emit = emissions.data();
  for (int64_t t = 1; t < x.input_length; ++t) {
    const double* previous = alpha + (t - 1) * x.max_states;
    double* current = alpha + t * x.max_states;
    gather_emissions(x.log_probs + (t * x.batch + x.n) * x.classes, label, states, emit);
    // States 0 and 1 have no s - 2 (nor 0 an s - 1); from 2 on every read is in bounds.
    current[0] = log_add3(previous[0], kNegInf, kNegInf) + emit[0];
    if (states > 1) current[1] = log_add3(previous[1], previous[0], kNegInf) + emit[1];
#pragma omp simd
    for (int64_t s = 2; s < states; ++s)
      current[s] = log_add3(previous[s], previous[s - 1], previous[s - 2] + skip_bias[s]) + emit[s];
  }
  const double* final_row = alpha + last * x.max_states;
  // An empty target has a single state and so no second path end to merge.
  if (x.target_length == 0) return -final_row[0];
  return -log_add3(final_row[states - 1], final_row[states - 2], kNegInf);
}

template <typename T>
void backward_beta(const Sample<T>& x, const Lattice& lattice, double* beta) {
  const int64_t states = x.states(), last = x.input_length - 1;
  double* final_row = beta + last * x.max_states;
  std::fill(final_row, final_row + states, kNegInf);
  final_row[states - 1] = x.lp(last, x.blank);
  if (x.target_length > 0) final_row[states - 2] = x.lp(last, x.label(states - 2));
  const int64_t* label = lattice.label.data();
  const double* skip_bias = lattice.skip_bias.data();
  std::vector<double> emissions(static_cast<size_t>(states));
  double* emit = emissions.data();
  for (int64_t t = last - 1; t >= 0; --t) {
    const double* next = beta + (t + 1) * x.max_states;
    double* current = beta + t * x.max_states;
    gather_emissions(x.log_probs + (t * x.batch + x.n) * x.classes, label, states, emit);
    // The last two states have no s + 2 (nor the last an s + 1).
    const int64_t end = states - 1;
    current[end] = log_add3(next[end], kNegInf, kNegInf) + emit[end];
    if (states > 1) current[end - 1] = log_add3(next[end - 1], next[end], kNegInf) + emit[end - 1];
      // State s may skip to s + 2 when s + 2 may be reached from s.
#pragma omp simd
    for (int64_t s = 0; s < states - 2; ++s)
      current[s] = log_add3(next[s], next[s + 1], next[s + 2] + skip_bias[s + 2]) + emit[s];
  }
}

// Per-thread rows of the gradient's collection step.
struct CollectBuffers {
  std::vector<double> log_alpha_beta, terms;  // per state
  std::vector<double> peak, sum, collected;   // per class
  CollectBuffers(int64_t states, int64_t classes)
      : log_alpha_beta(size_t(states)),
        terms(size_t(states)),
        peak(size_t(classes)),
        sum(size_t(classes)),
        collected(size_t(classes)) {}
};

// grad row t: PyTorch's collect-then-wrap. alpha * beta is log-summed per class first (as
// a log-sum-exp around each class's largest term, where PyTorch log-adds pairwise: equal to
// rounding), then grad = exp(lp) - exp(collected + nll - lp).
template <typename T>
void gradient_row(const Sample<T>& x, const Lattice& lattice, int64_t t, const double* alpha,
                  const double* beta, double nll, double grad_loss, CollectBuffers& buffers,
                  T* grad_row) {
  const int64_t states = x.states(), classes = x.classes;
  const int64_t* label = lattice.label.data();
  const double* a = alpha + t * x.max_states;
  const double* b = beta + t * x.max_states;
  double* log_alpha_beta = buffers.log_alpha_beta.data();
  double* terms = buffers.terms.data();
  double* peak = buffers.peak.data();
  double* sum = buffers.sum.data();
  double* collected = buffers.collected.data();
  std::fill_n(peak, classes, kNegInf);
  std::fill_n(sum, classes, 0.0);
  for (int64_t s = 0; s < states; ++s) {
    log_alpha_beta[s] = a[s] + b[s];
    peak[label[s]] = std::max(peak[label[s]], log_alpha_beta[s]);
  }
  // A class whose every term is -inf keeps -inf (its shift is 0, its terms exp(-inf) = 0).
#pragma omp simd
  for (int64_t s = 0; s < states; ++s) {
    const double shift = peak[label[s]] == kNegInf ? 0.0 : peak[label[s]];
    terms[s] = exp_f64(log_alpha_beta[s] - shift);
  }
  for (int64_t s = 0; s < states; ++s) sum[label[s]] += terms[s];
#pragma omp simd
  for (int64_t c = 0; c < classes; ++c) {
    // A select, not a branch, so that the loop vectorises (log(0) + -inf is -inf too).
    const double logged = log_f64(sum[c]) + peak[c];
    collected[c] = peak[c] == kNegInf ? kNegInf : logged;
    const double lp = x.lp(t, c);
    grad_row[c] = T((exp_f64(lp) - exp_f64(collected[c] + nll - lp)) * grad_loss);
  }
}

}  // namespace

void ctc_loss_forward(DType dtype, const void* log_probs, const CtcTargets& targets,
                      const CtcProblem& problem, void* log_alpha, void* log_beta,
                      void* neg_log_likelihood, void* loss) {
  SONATA_NVTX_RANGE("sonata::cpu::ctc_loss_forward");
  dispatch_f32_f64(dtype, "ctc_loss_forward", [&]<typename T>() {
    const T* lp = static_cast<const T*>(log_probs);
    double* alpha_all = static_cast<double*>(log_alpha);
    double* beta_all = static_cast<double*>(log_beta);
    double* nll_out = static_cast<double*>(neg_log_likelihood);
    T* loss_out = static_cast<T*>(loss);
    // Samples differ in length by up to T * L work, hence dynamic scheduling.
#pragma omp parallel for schedule(dynamic, 1)
    for (int64_t n = 0; n < problem.batch; ++n) {
      const Sample<T> sample(lp, targets, problem, n);
      const Lattice lattice(sample);
      const int64_t workspace = n * problem.max_time * problem.max_states;
      const double nll = forward_sample(sample, lattice, alpha_all + workspace);
      nll_out[n] = nll;
      const bool zeroed = problem.zero_infinity && nll == kInf;
      loss_out[n] = T(zeroed ? 0.0 : nll);
      if (beta_all && !zeroed && sample.input_length > 0)
        backward_beta(sample, lattice, beta_all + workspace);
    }
  });
}

void ctc_loss_backward(DType dtype, const void* grad_loss, const void* log_probs,
                       const CtcTargets& targets, const CtcProblem& problem, const void* log_alpha,
                       const void* log_beta, const void* neg_log_likelihood, void* grad_log_probs) {
  SONATA_NVTX_RANGE("sonata::cpu::ctc_loss_backward");
  dispatch_f32_f64(dtype, "ctc_loss_backward", [&]<typename T>() {
    const T* lp = static_cast<const T*>(log_probs);
    const T* grad_loss_in = static_cast<const T*>(grad_loss);
    const double* alpha_all = static_cast<const double*>(log_alpha);
    const double* nll_in = static_cast<const double*>(neg_log_likelihood);
    const double* beta_all = static_cast<const double*>(log_beta);
    T* grad = static_cast<T*>(grad_log_probs);
    const int64_t row_stride = problem.batch * problem.classes;
#pragma omp parallel for schedule(dynamic, 1)
    for (int64_t n = 0; n < problem.batch; ++n) {
      const Sample<T> sample(lp, targets, problem, n);
      const double nll = nll_in[n];
      const bool zeroed = problem.zero_infinity && nll == kInf;
      const int64_t live_rows = zeroed ? 0 : sample.input_length;
      const int64_t workspace = n * problem.max_time * problem.max_states;
      if (live_rows > 0) {
        const Lattice lattice(sample);
        CollectBuffers buffers(sample.states(), problem.classes);
        for (int64_t t = 0; t < live_rows; ++t)
          gradient_row(sample, lattice, t, alpha_all + workspace, beta_all + workspace, nll,
                       double(grad_loss_in[n]), buffers,
                       grad + t * row_stride + n * problem.classes);
      }
      // Frames past T_n do not reach the loss.
      for (int64_t t = live_rows; t < problem.max_time; ++t)
        std::fill_n(grad + t * row_stride + n * problem.classes, problem.classes, T(0));
    }
  });
}

SONATA_CPU_END

#if SONATA_CPU_ENTRY_POINTS
// The public functions: each runs the active capability's copy.
namespace sonata::kernels::cpu {

SONATA_CPU_DECLARE(ctc_loss_forward)
SONATA_CPU_DECLARE(ctc_loss_backward)

void ctc_loss_forward(DType dtype, const void* log_probs, const CtcTargets& targets,
                      const CtcProblem& problem, void* log_alpha, void* log_beta,
                      void* neg_log_likelihood, void* loss) {
  SONATA_CPU_CALL(ctc_loss_forward)
  (dtype, log_probs, targets, problem, log_alpha, log_beta, neg_log_likelihood, loss);
}

void ctc_loss_backward(DType dtype, const void* grad_loss, const void* log_probs,
                       const CtcTargets& targets, const CtcProblem& problem, const void* log_alpha,
                       const void* log_beta, const void* neg_log_likelihood, void* grad_log_probs) {
  SONATA_CPU_CALL(ctc_loss_backward)
  (dtype, grad_loss, log_probs, targets, problem, log_alpha, log_beta, neg_log_likelihood,
   grad_log_probs);
}

}  // namespace sonata::kernels::cpu
#endif

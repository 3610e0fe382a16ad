// CPU reference of the CTC loss: one sample per OpenMP iteration, everything in double,
// loops written as PyTorch's LossCTC.cpp writes them so the two agree to rounding.
#include "kernels/cpu/ctc.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "base/nvtx.h"
#include "kernels/cpu/dispatch.h"

namespace sonata::kernels::cpu {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();
constexpr double kInf = std::numeric_limits<double>::infinity();

// log(exp(a) + exp(b) + exp(c)) with PyTorch's guard: an all -inf triple gives -inf, not NaN.
double log_add3(double a, double b, double c) {
  double peak = std::max({a, b, c});
  if (peak == kNegInf) peak = 0;
  return std::log(std::exp(a - peak) + std::exp(b - peak) + std::exp(c - peak)) + peak;
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

template <typename T>
double forward_sample(const Sample<T>& x, double* alpha) {
  if (x.input_length == 0) return x.target_length == 0 ? 0.0 : kInf;
  const int64_t states = x.states(), last = x.input_length - 1;
  double* row = alpha;
  std::fill(row, row + states, kNegInf);
  row[0] = x.lp(0, x.blank);
  if (x.target_length > 0) row[1] = x.lp(0, x.label(1));
  for (int64_t t = 1; t < x.input_length; ++t) {
    const double* previous = alpha + (t - 1) * x.max_states;
    double* current = alpha + t * x.max_states;
    for (int64_t s = 0; s < states; ++s) {
      const int64_t label = x.label(s);
      const double stay = previous[s];
      const double advance = s > 0 ? previous[s - 1] : kNegInf;
      // Skipping the blank between two labels is allowed only when they differ.
      const double skip = s > 1 && x.label(s - 2) != label ? previous[s - 2] : kNegInf;
      current[s] = log_add3(stay, advance, skip) + x.lp(t, label);
    }
  }
  const double* final_row = alpha + last * x.max_states;
  // An empty target has a single state and so no second path end to merge.
  if (x.target_length == 0) return -final_row[0];
  return -log_add3(final_row[states - 1], final_row[states - 2], kNegInf);
}

template <typename T>
void backward_beta(const Sample<T>& x, double* beta) {
  const int64_t states = x.states(), last = x.input_length - 1;
  double* final_row = beta + last * x.max_states;
  std::fill(final_row, final_row + states, kNegInf);
  final_row[states - 1] = x.lp(last, x.blank);
  if (x.target_length > 0) final_row[states - 2] = x.lp(last, x.label(states - 2));
  for (int64_t t = last - 1; t >= 0; --t) {
    const double* next = beta + (t + 1) * x.max_states;
    double* current = beta + t * x.max_states;
    for (int64_t s = states - 1; s >= 0; --s) {
      const int64_t label = x.label(s);
      const double stay = next[s];
      const double advance = s < states - 1 ? next[s + 1] : kNegInf;
      const double skip = s < states - 2 && x.label(s + 2) != label ? next[s + 2] : kNegInf;
      current[s] = log_add3(stay, advance, skip) + x.lp(t, label);
    }
  }
}

// grad row t: PyTorch's collect-then-wrap, log-adding alpha*beta per class first.
template <typename T>
void gradient_row(const Sample<T>& x, int64_t t, const double* alpha, const double* beta,
                  double nll, double grad_loss, std::vector<double>& collected, T* grad_row) {
  std::fill(collected.begin(), collected.end(), kNegInf);
  const double* a = alpha + t * x.max_states;
  const double* b = beta + t * x.max_states;
  for (int64_t s = 0; s < x.states(); ++s) {
    const double log_alpha_beta = a[s] + b[s];
    double& into = collected[size_t(x.label(s))];
    if (into == kNegInf) {
      into = log_alpha_beta;
    } else {
      const double peak = std::max(into, log_alpha_beta);
      into = std::log(std::exp(into - peak) + std::exp(log_alpha_beta - peak)) + peak;
    }
  }
  for (int64_t c = 0; c < x.classes; ++c) {
    const double lp = x.lp(t, c);
    grad_row[c] = T((std::exp(lp) - std::exp(collected[size_t(c)] + nll - lp)) * grad_loss);
  }
}

}  // namespace

void ctc_loss_forward(DType dtype, const void* log_probs, const CtcTargets& targets,
                      const CtcProblem& problem, void* log_alpha, void* neg_log_likelihood,
                      void* loss) {
  SONATA_NVTX_RANGE("sonata::cpu::ctc_loss_forward");
  dispatch_float(dtype, "ctc_loss_forward", [&]<typename T>() {
    const T* lp = static_cast<const T*>(log_probs);
    double* alpha_all = static_cast<double*>(log_alpha);
    double* nll_out = static_cast<double*>(neg_log_likelihood);
    T* loss_out = static_cast<T*>(loss);
    // Samples differ in length by up to T * L work, hence dynamic scheduling.
#pragma omp parallel for schedule(dynamic, 1)
    for (int64_t n = 0; n < problem.batch; ++n) {
      const Sample<T> sample(lp, targets, problem, n);
      const double nll =
          forward_sample(sample, alpha_all + n * problem.max_time * problem.max_states);
      nll_out[n] = nll;
      loss_out[n] = T(problem.zero_infinity && nll == kInf ? 0.0 : nll);
    }
  });
}

void ctc_loss_backward(DType dtype, const void* grad_loss, const void* log_probs,
                       const CtcTargets& targets, const CtcProblem& problem, const void* log_alpha,
                       const void* neg_log_likelihood, void* log_beta, void* grad_log_probs) {
  SONATA_NVTX_RANGE("sonata::cpu::ctc_loss_backward");
  dispatch_float(dtype, "ctc_loss_backward", [&]<typename T>() {
    const T* lp = static_cast<const T*>(log_probs);
    const T* grad_loss_in = static_cast<const T*>(grad_loss);
    const double* alpha_all = static_cast<const double*>(log_alpha);
    const double* nll_in = static_cast<const double*>(neg_log_likelihood);
    double* beta_all = static_cast<double*>(log_beta);
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
        backward_beta(sample, beta_all + workspace);
        std::vector<double> collected(size_t(problem.classes));
        for (int64_t t = 0; t < live_rows; ++t)
          gradient_row(sample, t, alpha_all + workspace, beta_all + workspace, nll,
                       double(grad_loss_in[n]), collected,
                       grad + t * row_stride + n * problem.classes);
      }
      // Frames past T_n do not reach the loss.
      for (int64_t t = live_rows; t < problem.max_time; ++t)
        std::fill_n(grad + t * row_stride + n * problem.classes, problem.classes, T(0));
    }
  });
}

}  // namespace sonata::kernels::cpu

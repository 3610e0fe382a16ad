#pragma once
// CTC loss (Graves et al. 2006) over a contiguous [T, N, C] block of log-probabilities, with
// PyTorch's semantics (aten/src/ATen/native/LossCTC.cpp): log-space alpha/beta recursions
// over the extended labels (blank, l1, blank, ..., lL, blank), per-sample lengths, no
// label-count limit. The CPU reference accumulates in double.
//
// Element types: log_probs and grad_log_probs f32 or f64 (`dtype`); the workspaces
// (log_alpha, log_beta: [N, T, max_states]) and neg_log_likelihood ([N]) are f64; loss and
// grad_loss ([N]) are f32, or f64 when dtype is f64. Rows t >= T_n of the workspaces are
// left untouched.
#include "base/dtype.h"
#include "kernels/common/ctc.h"

namespace sonata::kernels::cpu {

// loss[n] = -log p(target_n | x_n), +inf when no alignment exists (0 with zero_infinity);
// neg_log_likelihood keeps the raw value for the backward. With `log_beta` (the loss will be
// differentiated) the beta recursion runs too, as the CUDA twin's does; nullptr skips it.
// Samples that zero_infinity zeroes get no beta (the gradient never reads it).
void ctc_loss_forward(DType dtype, const void* log_probs, const CtcTargets& targets,
                      const CtcProblem& problem, void* log_alpha, void* log_beta,
                      void* neg_log_likelihood, void* loss);

// PyTorch's gradient w.r.t. log_probs from the forward's alpha and beta, for every [T, N, C]
// element:
//   grad[t,n,c] = (exp(lp[t,n,c]) - exp(log sum_{s: l'_s = c} alpha_t(s) beta_t(s) + nll_n
//                  - lp[t,n,c])) * grad_loss[n]            for t < T_n,
//   0 for t >= T_n, and 0 for the whole sample when zero_infinity and nll_n is +inf.
// The exp(lp) term assumes normalised log_probs (it is what log_softmax's backward cancels),
// so the composed log_softmax + ctc gradient is exactly softmax - posterior.
void ctc_loss_backward(DType dtype, const void* grad_loss, const void* log_probs,
                       const CtcTargets& targets, const CtcProblem& problem, const void* log_alpha,
                       const void* log_beta, const void* neg_log_likelihood, void* grad_log_probs);

}  // namespace sonata::kernels::cpu

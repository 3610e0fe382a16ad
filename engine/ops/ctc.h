#pragma once
// Connectionist temporal classification loss, torch.nn.functional.ctc_loss's semantics.
//
// log_probs [T, N, C]: log-probabilities (normalised over C); targets: i64 or i32, padded
// [N, S] with S >= max L_n, or all samples' labels concatenated [sum L_n]; input_lengths and
// target_lengths: [N] i64 or i32, T_n <= T. Labels lie in [0, C) and are never the blank.
// Targets and lengths are read on the host (keep them on the CPU: one on a GPU costs a
// device-to-host copy that waits for the device) and uploaded to log_probs' device.
//
// Returns per-sample losses [N] (Reduction::none), their sum, or the mean over the batch of
// each loss divided by its target length clamped to 1 (Reduction::mean). Losses are f32, or
// f64 for f64 inputs. A sample with no alignment (T_n < L_n + adjacent repeats) has loss
// +inf; with zero_infinity its loss and gradient are 0 instead.
//
// The gradient w.r.t. log_probs is PyTorch's: (exp(lp) - posterior) * grad for t < T_n, 0
// after. The exp(lp) term is not the derivative of the loss as a function of free log_probs
// (that is -posterior); it is what makes the gradient through a preceding log_softmax come
// out as softmax - posterior, and it is exact only for normalised log_probs. Feed
// log_softmax output (or use ctc_loss_from_logits).
#include <cstdint>

#include "engine/ops/reduction.h"
#include "engine/tensor.h"

namespace sonata {

struct CtcOptions {
  int64_t blank = 0;
  Reduction reduction = Reduction::mean;
  bool zero_infinity = false;
};

Tensor ctc_loss(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                const Tensor& target_lengths, const CtcOptions& options = {});

// ctc_loss(log_softmax(logits, 2), ...) in one op: the log_softmax output is kept (f32 for
// half inputs on CUDA) and the backward writes softmax - posterior straight into the
// gradient of the logits, skipping log_softmax's backward pass.
Tensor ctc_loss_from_logits(const Tensor& logits, const Tensor& targets,
                            const Tensor& input_lengths, const Tensor& target_lengths,
                            const CtcOptions& options = {});

}  // namespace sonata

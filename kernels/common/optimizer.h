#pragma once
// The fused optimizer updates, written once for host and device: what one element of a
// parameter goes through in torch.optim.SGD / Adam / AdamW (PyTorch 1.13), in the order
// PyTorch's separate tensor ops apply it, so that both backends and the reference agree to
// rounding. Also the argument structs of kernels/cpu/optimizer.h and kernels/cuda/optimizer.h.
#include <cmath>
#include <cstdint>

#include "base/hd.h"

namespace sonata::kernels {

// One parameter's memory for an SGD update. State is in the compute type (float for f32 and
// half parameters, double for f64). `master` is the fp32 copy of a half parameter, which the
// update reads and writes before rounding it into `param`; null for f32 / f64 parameters.
// `momentum_buffer` may be null when momentum is 0.
struct SgdTensors {
  void* param;
  const void* grad;
  float* master;
  void* momentum_buffer;
  int64_t numel;
};

struct AdamTensors {
  void* param;
  const void* grad;
  float* master;
  void* exp_avg;
  void* exp_avg_sq;
  void* max_exp_avg_sq;  // amsgrad only
  int64_t numel;
};

struct SgdHyper {
  double lr = 0, momentum = 0, dampening = 0, weight_decay = 0;
  bool nesterov = false;
  // PyTorch starts the momentum buffer as a copy of the first (decayed) gradient, without
  // dampening; the kernel then writes the buffer without reading it.
  bool first_step = false;
};

enum class AdamWeightDecay : uint8_t {
  none,
  l2,         // Adam: g += weight_decay * p
  decoupled,  // AdamW: p *= 1 - lr * weight_decay
};

struct AdamHyper {
  double lr = 0, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0;
  AdamWeightDecay decay = AdamWeightDecay::none;
  bool amsgrad = false;
  int64_t step = 1;  // this update's step count (1 on the first), for the bias corrections
};

// The loss scaler's hook. Both pointers live where the parameters do (device memory for
// CUDA) and may be null: grads are multiplied by *inv_scale as they are read (the unscale,
// and a clipping factor with it), and nothing is written when *found_inf != 0, so a skipped
// step never waits for the host.
struct GradScaling {
  const float* inv_scale = nullptr;
  const float* found_inf = nullptr;
};

// Hyper-parameters as the compute type C sees them, derived once per launch in double as
// PyTorch derives its Python-float scalars, then rounded to C as PyTorch's kernels round them.
template <typename C>
struct SgdScalars {
  C neg_lr, momentum, one_minus_dampening, weight_decay;

  explicit SgdScalars(const SgdHyper& h)
      : neg_lr(C(-h.lr)),
        momentum(C(h.momentum)),
        one_minus_dampening(C(1 - h.dampening)),
        weight_decay(C(h.weight_decay)) {}
};

template <typename C>
struct AdamScalars {
  C beta1, beta2, one_minus_beta1, one_minus_beta2, eps, weight_decay, decay_factor;
  C bias_correction2_sqrt, neg_step_size;

  explicit AdamScalars(const AdamHyper& h)
      : beta1(C(h.beta1)),
        beta2(C(h.beta2)),
        one_minus_beta1(C(1 - h.beta1)),
        one_minus_beta2(C(1 - h.beta2)),
        eps(C(h.eps)),
        weight_decay(C(h.weight_decay)),
        decay_factor(C(1 - h.lr * h.weight_decay)),
        bias_correction2_sqrt(C(std::sqrt(1 - std::pow(h.beta2, double(h.step))))),
        neg_step_size(C(-(h.lr / (1 - std::pow(h.beta1, double(h.step)))))) {}
};

// torch.optim.SGD for one element: d_p = g + wd*p; buf = momentum*buf + (1-dampening)*d_p
// (buf = d_p on the first step); d_p = nesterov ? d_p + momentum*buf : buf; p -= lr*d_p.
// The options are template arguments so that the loop around this has no branch.
template <bool kWeightDecay, bool kMomentum, bool kNesterov, bool kFirstStep, typename C>
SONATA_HD C sgd_update(C p, C g, C& buf, const SgdScalars<C>& s) {
  if constexpr (kWeightDecay) g = g + s.weight_decay * p;
  if constexpr (kMomentum) {
    if constexpr (kFirstStep) {
      buf = g;
    } else {
      buf = buf * s.momentum + s.one_minus_dampening * g;
    }
    g = kNesterov ? g + s.momentum * buf : buf;
  }
  return p + s.neg_lr * g;
}

// torch.optim.Adam / AdamW for one element. The products and quotients associate as in
// PyTorch's addcmul_ (value*t1*t2) and addcdiv_ (value*t1/t2).
template <AdamWeightDecay kDecay, bool kAmsgrad, typename C>
SONATA_HD C adam_update(C p, C g, C& exp_avg, C& exp_avg_sq, C& max_exp_avg_sq,
                        const AdamScalars<C>& s) {
  using std::sqrt;
  if constexpr (kDecay == AdamWeightDecay::l2) g = g + s.weight_decay * p;
  if constexpr (kDecay == AdamWeightDecay::decoupled) p = p * s.decay_factor;
  exp_avg = exp_avg * s.beta1 + s.one_minus_beta1 * g;
  exp_avg_sq = exp_avg_sq * s.beta2 + s.one_minus_beta2 * g * g;
  C second_moment = exp_avg_sq;
  if constexpr (kAmsgrad) {
    // torch.maximum: a NaN on either side wins.
    const bool max_is_nan = max_exp_avg_sq != max_exp_avg_sq;
    if (!max_is_nan && !(max_exp_avg_sq >= exp_avg_sq)) max_exp_avg_sq = exp_avg_sq;
    second_moment = max_exp_avg_sq;
  }
  const C denom = sqrt(second_moment) / s.bias_correction2_sqrt + s.eps;
  return p + s.neg_step_size * exp_avg / denom;
}

}  // namespace sonata::kernels

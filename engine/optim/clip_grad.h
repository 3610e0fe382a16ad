#pragma once
// Gradient clipping by the global L2 norm, as torch.nn.utils.clip_grad_norm_ (norm_type 2).
// The norm is summed in double on the gradients' device, chunk by chunk in a fixed order
// (kernels/*/grad_norm.h), and stays there: the host waits only if it reads the result.
#include <vector>

#include "engine/tensor.h"

namespace sonata {

// The L2 norm over the gradients of `parameters` (parameters without one are skipped), and
// every gradient multiplied by min(max_norm / (norm + 1e-6), 1), as torch does even when
// that factor is 1. Returns the norm before clipping, a 0-dim tensor on the gradients'
// device: f64 for f64 gradients, else f32. All gradients must share one device.
Tensor clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm);
// The same norm, leaving the gradients alone (for logging without clipping).
Tensor grad_norm(const std::vector<Tensor>& parameters);

// For a norm over gradients that several processes hold (pipeline stages): this process's
// sum of squares, a 0-dim f64 tensor on the gradients' device (CPU zero without gradients),
// and the clipping with the total norm the caller summed: every gradient multiplied by
// min(max_norm / (total_norm + 1e-6), 1), as clip_grad_norm_ does with its own.
Tensor grad_squared_norm(const std::vector<Tensor>& parameters);
void clip_grads_to_norm_(const std::vector<Tensor>& parameters, double total_norm, double max_norm);

}  // namespace sonata

#pragma once
// Dynamic loss scaling for mixed precision, as torch.cuda.amp.GradScaler (PyTorch 1.13) runs
// it: one fused pass that unscales the gradients and notes any inf/NaN among them
// (torch._amp_foreach_non_finite_check_and_unscale_), and the scale's update after a step
// (torch._amp_update_scale_). The reference for kernels/cuda/amp.h, which has the same
// functions plus a stream. Every scalar pointer is host memory here.
#include <cstdint>

#include "base/dtype.h"

namespace sonata::kernels::cpu {

// For each of the `count` tensors (f16, bf16, f32 or f64): *found_inf = 1 if any element is
// inf or NaN (it is never cleared here), and, when inv_scale is not null, every element
// x = x * *inv_scale, computed in float (double for f64) whatever was found.
void non_finite_check_and_unscale(DType dtype, void* const* tensors, const int64_t* numels,
                                  int64_t count, float* found_inf, const float* inv_scale);

// After a step: *found_inf ? scale *= backoff_factor, tracker = 0
//                          : (++tracker == growth_interval ? scale *= growth_factor (unless
//                             that overflows f32), tracker = 0 : nothing more);
// then *inv_scale = 1 / *scale (computed in double) and *found_inf = 0 for the next step.
void update_scale(float* scale, float* inv_scale, int32_t* growth_tracker, float* found_inf,
                  double growth_factor, double backoff_factor, int64_t growth_interval);

}  // namespace sonata::kernels::cpu

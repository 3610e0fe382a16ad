#pragma once
// The loss scaler's arithmetic, written once for host and device (kernels/cpu/amp.h,
// kernels/cuda/amp.h): the finiteness test of the unscale pass and the scale's update, as
// PyTorch 1.13's _amp_foreach_non_finite_check_and_unscale_ and _amp_update_scale_ kernels
// compute them.
#include <cstdint>
#include <cstring>

#include "base/half.h"
#include "base/hd.h"

namespace sonata::kernels {

// Exponent bits all set: inf or NaN. A bit test rather than std::isfinite, so that host
// and device agree and the CPU loop vectorises.
SONATA_HD bool is_finite_value(float value) {
  return (float_bits(value) & 0x7f800000u) != 0x7f800000u;
}
SONATA_HD bool is_finite_value(double value) {
  uint64_t bits;
  std::memcpy(&bits, &value, 8);
  return (bits & 0x7ff0000000000000ull) != 0x7ff0000000000000ull;
}

// One update of the scale after a step. The products are taken in double and rounded to
// f32, as torch's float * double; growth that would overflow f32 is dropped. The inverse
// is 1 / scale in double rounded to f32, as GradScaler's scale.double().reciprocal().float().
SONATA_HD void update_scale_state(float* scale, float* inv_scale, int32_t* growth_tracker,
                                  float* found_inf, double growth_factor, double backoff_factor,
                                  int64_t growth_interval) {
  if (*found_inf != 0.0f) {
    *scale = float(double(*scale) * backoff_factor);
    *growth_tracker = 0;
  } else {
    // A clean step: it counts before the comparison.
    const int64_t successful = int64_t(*growth_tracker) + 1;
    if (successful == growth_interval) {
      const float grown = float(double(*scale) * growth_factor);
      if (is_finite_value(grown)) *scale = grown;
      *growth_tracker = 0;
    } else {
      *growth_tracker = int32_t(successful);
    }
  }
  *inv_scale = float(1.0 / double(*scale));
  *found_inf = 0.0f;
}

}  // namespace sonata::kernels

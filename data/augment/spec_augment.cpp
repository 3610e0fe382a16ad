#include "data/augment/spec_augment.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"
#include "data/augment/augment_key.h"

namespace sonata {
namespace {

void check_options(const SpecAugmentOptions& o) {
  SONATA_CHECK(o.freq_masks >= 0, "SpecAugmentOptions.freq_masks must not be negative, got ",
               o.freq_masks);
  SONATA_CHECK(o.time_masks >= 0, "SpecAugmentOptions.time_masks must not be negative, got ",
               o.time_masks);
  SONATA_CHECK(o.freq_max_width >= 0,
               "SpecAugmentOptions.freq_max_width must not be negative, got ", o.freq_max_width);
  SONATA_CHECK(o.time_max_width >= 0,
               "SpecAugmentOptions.time_max_width must not be negative, got ", o.time_max_width);
  SONATA_CHECK(o.time_max_fraction > 0 && o.time_max_fraction <= 1,
               "SpecAugmentOptions.time_max_fraction must be in (0, 1], got ", o.time_max_fraction);
}

}  // namespace

void spec_augment(Tensor& frames, const SpecAugmentOptions& options, uint64_t seed, uint64_t key) {
  check_options(options);
  SONATA_CHECK(frames.dim() == 2, "spec_augment: frames must be [T, F], got ", frames.dim(),
               " dimensions");
  SONATA_CHECK(frames.dtype() == DType::f32, "spec_augment: frames must be float32, got ",
               dtype_name(frames.dtype()));
  SONATA_CHECK(frames.device().is_cpu(), "spec_augment: frames must be on the CPU, got ",
               frames.device().str());
  const int64_t steps = frames.size(0), bins = frames.size(1);
  const int64_t step_stride = frames.strides()[0], bin_stride = frames.strides()[1];
  float* data = frames.data<float>();
  if (steps == 0 || bins == 0) return;

  float fill = options.mask_value;
  if (options.mask_with_mean && options.freq_masks + options.time_masks > 0) {
    double sum = 0;
    for (int64_t t = 0; t < steps; ++t)
      for (int64_t f = 0; f < bins; ++f) sum += data[t * step_stride + f * bin_stride];
    fill = float(sum / double(steps * bins));
  }

  CounterRng rng = augment::rng_for(seed, key, augment::Purpose::spec_augment);
  // One mask along an axis of `size`: width in [0, max_width], start in [0, size - width].
  auto draw = [&](int64_t size, int64_t max_width) {
    const int64_t width = int64_t(rng.below(uint64_t(max_width) + 1));
    const int64_t start = int64_t(rng.below(uint64_t(size - width) + 1));
    return std::pair(start, width);
  };
  const int64_t freq_width = std::min(options.freq_max_width, bins);
  for (int64_t m = 0; m < options.freq_masks; ++m) {
    const auto [start, width] = draw(bins, freq_width);
    for (int64_t t = 0; t < steps; ++t)
      for (int64_t f = start; f < start + width; ++f) data[t * step_stride + f * bin_stride] = fill;
  }
  int64_t time_width = std::min(options.time_max_width, steps);
  if (options.time_max_fraction < 1.0)
    time_width =
        std::min(time_width, int64_t(std::floor(options.time_max_fraction * double(steps))));
  for (int64_t m = 0; m < options.time_masks; ++m) {
    const auto [start, width] = draw(steps, time_width);
    for (int64_t t = start; t < start + width; ++t)
      for (int64_t f = 0; f < bins; ++f) data[t * step_stride + f * bin_stride] = fill;
  }
}

}  // namespace sonata

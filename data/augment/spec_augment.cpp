#include "data/augment/spec_augment.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "base/error.h"
#include "data/augment/augment_key.h"
#include "engine/ops.h"

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

SpecAugmentMasks draw_spec_augment(int64_t steps, int64_t bins, const SpecAugmentOptions& options,
                                   uint64_t seed, uint64_t key) {
  check_options(options);
  SpecAugmentMasks masks;
  if (steps <= 0 || bins <= 0) return masks;
  CounterRng rng = augment::rng_for(seed, key, augment::Purpose::spec_augment);
  // One mask along an axis of `size`: width in [0, max_width], start in [0, size - width].
  auto draw = [&](int64_t size, int64_t max_width) {
    const int64_t width = int64_t(rng.below(uint64_t(max_width) + 1));
    const int64_t start = int64_t(rng.below(uint64_t(size - width) + 1));
    return SpecAugmentMask{start, width};
  };
  const int64_t freq_width = std::min(options.freq_max_width, bins);
  for (int64_t m = 0; m < options.freq_masks; ++m) masks.freq.push_back(draw(bins, freq_width));
  int64_t time_width = std::min(options.time_max_width, steps);
  if (options.time_max_fraction < 1.0)
    time_width =
        std::min(time_width, int64_t(std::floor(options.time_max_fraction * double(steps))));
  for (int64_t m = 0; m < options.time_masks; ++m) masks.time.push_back(draw(steps, time_width));
  return masks;
}

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

  const SpecAugmentMasks masks = draw_spec_augment(steps, bins, options, seed, key);
  for (const SpecAugmentMask& mask : masks.freq)
    for (int64_t t = 0; t < steps; ++t)
      for (int64_t f = mask.start; f < mask.start + mask.width; ++f)
        data[t * step_stride + f * bin_stride] = fill;
  for (const SpecAugmentMask& mask : masks.time)
    for (int64_t t = mask.start; t < mask.start + mask.width; ++t)
      for (int64_t f = 0; f < bins; ++f) data[t * step_stride + f * bin_stride] = fill;
}

Tensor spec_augment_batch(const Tensor& features, const std::vector<int64_t>& frames,
                          const SpecAugmentOptions& options, uint64_t seed,
                          const std::vector<uint64_t>& keys) {
  check_options(options);
  SONATA_CHECK(features.dim() == 3 || (features.dim() == 4 && features.size(1) == 1),
               "spec_augment_batch: features must be [N, T, F] or [N, 1, T, F], got ",
               shape_str(features.shape()));
  SONATA_CHECK(features.dtype() == DType::f32, "spec_augment_batch: features must be float32, got ",
               dtype_name(features.dtype()));
  const int64_t items = features.size(0), steps = features.size(-2), bins = features.size(-1);
  SONATA_CHECK(int64_t(frames.size()) == items && int64_t(keys.size()) == items,
               "spec_augment_batch: ", frames.size(), " frame counts and ", keys.size(),
               " keys for a batch of ", items);
  for (const int64_t count : frames)
    SONATA_CHECK(count >= 0 && count <= steps, "spec_augment_batch: a frame count of ", count,
                 " is outside the batch's [0, ", steps, "]");
  if (options.freq_masks + options.time_masks == 0 || features.numel() == 0) return features;

  // Flags per (item, frame) and (item, bin), built here and broadcast over the other axis.
  std::vector<uint8_t> time_hit(size_t(items * steps), 0), freq_hit(size_t(items * bins), 0);
  for (int64_t n = 0; n < items; ++n) {
    const SpecAugmentMasks masks =
        draw_spec_augment(frames[size_t(n)], bins, options, seed, keys[size_t(n)]);
    for (const SpecAugmentMask& mask : masks.time)
      std::fill_n(time_hit.begin() + n * steps + mask.start, mask.width, 1);
    for (const SpecAugmentMask& mask : masks.freq)
      std::fill_n(freq_hit.begin() + n * bins + mask.start, mask.width, 1);
  }
  std::vector<uint8_t> valid(size_t(items * steps), 0);
  for (int64_t n = 0; n < items; ++n) std::fill_n(valid.begin() + n * steps, frames[size_t(n)], 1);

  const bool four = features.dim() == 4;
  const Shape per_frame = four ? Shape{items, 1, steps, 1} : Shape{items, steps, 1};
  const Shape per_bin = four ? Shape{items, 1, 1, bins} : Shape{items, 1, bins};
  const Shape per_item = four ? Shape{items, 1, 1, 1} : Shape{items, 1, 1};
  const TensorOptions flags = TensorOptions{}.with(DType::boolean).with(features.device());
  const Tensor time_cond = from_host(time_hit.data(), per_frame, DType::boolean, flags);
  const Tensor valid_cond = from_host(valid.data(), per_frame, DType::boolean, flags);
  const Tensor freq_cond = from_host(freq_hit.data(), per_bin, DType::boolean, flags);

  Tensor fill = full({}, options.mask_value, features.options());
  if (options.mask_with_mean) {
    // The item's mean over its frames, summed in float64 as spec_augment does (the CPU's
    // reduction runs in the same order, so the fill is the same float).
    const Tensor zero = zeros({}, TensorOptions{}.with(DType::f64).with(features.device()));
    const Tensor kept = where(valid_cond, features.to(DType::f64), zero);
    std::vector<double> counts;
    for (const int64_t count : frames) counts.push_back(double(std::max<int64_t>(count, 1) * bins));
    const Tensor sums = sum(kept, {features.dim() - 2, features.dim() - 1}, /*keepdim=*/true);
    fill = div(sums, from_vector(counts, per_item,
                                 TensorOptions{}.with(DType::f64).with(features.device())))
               .to(DType::f32);
  }
  // Time masks lie within the item's frames; frequency masks span the batch's, so the padding
  // is put back after them.
  const Tensor masked = where(freq_cond, fill, where(time_cond, fill, features));
  return where(valid_cond, masked, features);
}

}  // namespace sonata

// Augmentation of whole batches (spec_augment_batch, image_jitter_batch) against the per-item
// functions on the CPU, bit for bit, over ragged items, both SpecAugment layouts, both fills
// and each jitter setting alone; the image jitter also against its formula recomputed here in
// float64 from the drawn factors; and the errors that name the argument.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "data/augment/augment_key.h"
#include "data/augment/image_jitter.h"
#include "data/augment/random_crop.h"
#include "data/augment/spec_augment.h"
#include "engine/tensor.h"

using namespace sonata;
using Catch::Contains;

namespace {

std::vector<float> uniform(size_t count, float low, float high, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> draw(low, high);
  std::vector<float> values(count);
  for (float& v : values) v = draw(rng);
  return values;
}

std::vector<uint64_t> keys_of(int64_t epoch, const std::vector<int64_t>& items) {
  std::vector<uint64_t> keys;
  for (const int64_t item : items) keys.push_back(augment_key(epoch, item));
  return keys;
}

// What spec_augment_batch must give: each item's first frames[n] rows masked by spec_augment
// as a [frames[n], F] tensor of its own, the padding untouched.
std::vector<float> per_item_spec_augment(const std::vector<float>& values, int64_t steps,
                                         int64_t bins, const std::vector<int64_t>& frames,
                                         const SpecAugmentOptions& options, uint64_t seed,
                                         const std::vector<uint64_t>& keys) {
  std::vector<float> out = values;
  for (size_t n = 0; n < frames.size(); ++n) {
    const int64_t offset = int64_t(n) * steps * bins;
    std::vector<float> item(out.begin() + offset, out.begin() + offset + frames[n] * bins);
    Tensor view = from_blob(item.data(), {frames[n], bins}, DType::f32);
    spec_augment(view, options, seed, keys[n]);
    std::copy(item.begin(), item.end(), out.begin() + offset);
  }
  return out;
}

}  // namespace

TEST_CASE("SpecAugment on a batch masks as spec_augment does item by item", "[augment]") {
  const int64_t items = 5, steps = 37, bins = 20;
  // Ragged: full, part, empty, one frame, most.
  const std::vector<int64_t> frames{37, 20, 0, 1, 30};
  const std::vector<uint64_t> keys = keys_of(3, {4, 9, 1, 0, 7});
  const std::vector<float> values = uniform(size_t(items * steps * bins), -2.0f, 3.0f, 11);
  SpecAugmentOptions options;
  options.freq_masks = 3;
  options.freq_max_width = 8;
  options.time_masks = 3;
  options.time_max_width = 10;
  options.mask_value = -7.5f;
  const bool with_mean = GENERATE(false, true);
  const bool four_dims = GENERATE(false, true);
  options.mask_with_mean = with_mean;
  options.time_max_fraction = with_mean ? 0.3 : 1.0;
  INFO("mask_with_mean " << with_mean << ", [N, 1, T, F] " << four_dims);
  const Shape shape = four_dims ? Shape{items, 1, steps, bins} : Shape{items, steps, bins};
  const Tensor features = from_vector(values, shape);

  const Tensor masked = spec_augment_batch(features, frames, options, 5, keys);
  CHECK(masked.shape() == shape);
  const std::vector<float> got = masked.to_vector<float>();
  const std::vector<float> expected =
      per_item_spec_augment(values, steps, bins, frames, options, 5, keys);
  CHECK(got == expected);
  CHECK(got != values);                          // masks were drawn and applied at all
  CHECK(features.to_vector<float>() == values);  // the input is left alone
  // The padding is not masked: a frequency mask spans the item's frames only.
  for (int64_t n = 0; n < items; ++n)
    for (int64_t i = frames[size_t(n)] * bins; i < steps * bins; ++i)
      REQUIRE(got[size_t(n * steps * bins + i)] == values[size_t(n * steps * bins + i)]);
}

TEST_CASE("SpecAugment on a batch: no masks give the input, and the masks drawn are the item's",
          "[augment]") {
  const std::vector<float> values = uniform(2 * 6 * 4, 0.0f, 1.0f, 3);
  const Tensor features = from_vector(values, {2, 6, 4});
  SpecAugmentOptions none;
  none.freq_masks = 0;
  none.time_masks = 0;
  CHECK(spec_augment_batch(features, {6, 3}, none, 1, {1, 2}).to_vector<float>() == values);

  // An item with one time mask of width exactly 2 and no frequency mask: the masked rows are
  // the drawn ones, and only they hold the fill.
  SpecAugmentOptions rows;
  rows.freq_masks = 0;
  rows.time_masks = 1;
  rows.time_max_width = 2;
  rows.mask_value = 9.0f;
  for (uint64_t key = 0; key < 20; ++key) {
    const SpecAugmentMasks drawn = draw_spec_augment(6, 4, rows, 1, key);
    REQUIRE(drawn.freq.empty());
    REQUIRE(drawn.time.size() == 1);
    const std::vector<float> got =
        spec_augment_batch(features, {6, 0}, rows, 1, {key, key}).to_vector<float>();
    for (int64_t t = 0; t < 6; ++t)
      for (int64_t f = 0; f < 4; ++f) {
        const bool in_mask =
            t >= drawn.time[0].start && t < drawn.time[0].start + drawn.time[0].width;
        CHECK(got[size_t(t * 4 + f)] == (in_mask ? 9.0f : values[size_t(t * 4 + f)]));
      }
    // The second item has no frames: nothing of it changes.
    CHECK(std::equal(got.begin() + 24, got.end(), values.begin() + 24));
  }
}

TEST_CASE("image jitter on a batch equals image_jitter per image and its float64 formula",
          "[augment]") {
  const int64_t items = 4, channels = 3, height = 5, width = 7;
  const int64_t size = channels * height * width;
  // Over all of [-1, 1]: brightness factors above 1 push the brightest past the clamp.
  const std::vector<float> values = uniform(size_t(items * size), -1.0f, 1.0f, 21);
  const std::vector<uint64_t> keys = keys_of(2, {3, 0, 8, 5});
  const ImageJitter jitter =
      GENERATE(ImageJitter{0.6, 0.5}, ImageJitter{0.4, 0}, ImageJitter{0, 0.7});
  INFO("brightness " << jitter.brightness << ", contrast " << jitter.contrast);
  const Tensor images = from_vector(values, {items, channels, height, width});
  const std::vector<float> got = image_jitter_batch(images, jitter, 9, keys).to_vector<float>();
  CHECK(images.to_vector<float>() == values);

  std::vector<float> expected = values;
  for (int64_t n = 0; n < items; ++n) {
    const std::span<float> image(expected.data() + n * size, size_t(size));
    const JitterFactors factors = image_jitter(image, jitter, 9, keys[size_t(n)]);
    // The definition written out in float64 (data/augment/image_jitter.h).
    std::vector<double> u(static_cast<size_t>(size));
    double sum = 0;
    for (int64_t i = 0; i < size; ++i) {
      const double x = values[size_t(n * size + i)];
      u[size_t(i)] = std::min(std::max((x + 1) / 2 * factors.brightness, 0.0), 1.0);
      sum += u[size_t(i)];
    }
    const double mean = sum / double(size);
    for (int64_t i = 0; i < size; ++i) {
      const double c = factors.contrast;
      const double v = std::min(std::max(c * u[size_t(i)] + (1 - c) * mean, 0.0), 1.0) * 2 - 1;
      REQUIRE(got[size_t(n * size + i)] == Approx(v).margin(1e-6));
    }
  }
  CHECK(got == expected);
  CHECK(got != values);
}

TEST_CASE("augmentation batches: settings off give the input, bad arguments are named",
          "[augment]") {
  const Tensor images = from_vector(uniform(2 * 8, -1.0f, 1.0f, 5), {2, 1, 2, 4});
  CHECK(image_jitter_batch(images, {}, 1, {1, 2}).to_vector<float>() == images.to_vector<float>());
  CHECK_THROWS_WITH(image_jitter_batch(images, {.brightness = 0.2}, 1, {1}),
                    Contains("1 keys for a batch of 2"));
  CHECK_THROWS_WITH(image_jitter_batch(images, {.contrast = -0.2}, 1, {1, 2}),
                    Contains("contrast must be finite and not negative"));
  CHECK_THROWS_WITH(image_jitter_batch(images.to(DType::f64), {.brightness = 0.2}, 1, {1, 2}),
                    Contains("images must be float32"));

  const Tensor features = from_vector(uniform(2 * 3 * 4, 0.0f, 1.0f, 6), {2, 3, 4});
  const SpecAugmentOptions options;
  CHECK_THROWS_WITH(spec_augment_batch(features, {3}, options, 1, {1, 2}),
                    Contains("1 frame counts and 2 keys for a batch of 2"));
  CHECK_THROWS_WITH(spec_augment_batch(features, {3, 4}, options, 1, {1, 2}),
                    Contains("frame count of 4 is outside the batch's [0, 3]"));
  CHECK_THROWS_WITH(spec_augment_batch(features.view({2, 12}), {3, 3}, options, 1, {1, 2}),
                    Contains("features must be [N, T, F] or [N, 1, T, F]"));
  SpecAugmentOptions bad;
  bad.time_max_fraction = 0;
  CHECK_THROWS_WITH(spec_augment_batch(features, {3, 3}, bad, 1, {1, 2}),
                    Contains("time_max_fraction must be in (0, 1]"));
}

TEST_CASE("random crop on a batch equals random_crop item by item", "[augment]") {
  // Frames [N, T, F] (step F) with ragged valid lengths, some shorter than the crop (padded).
  const int64_t items = 5, steps = 40, bins = 3, length = 16;
  const std::vector<int64_t> sizes{40, 16, 7, 0, 23};
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> draw(-1, 1);
  std::vector<float> values(size_t(items * steps * bins));
  for (float& v : values) v = draw(rng);
  const Tensor batch = from_vector(values, {items, steps, bins});
  std::vector<uint64_t> keys;
  for (int64_t n = 0; n < items; ++n) keys.push_back(augment_key(3, 10 + n));
  const Tensor cropped = random_crop_batch(batch, sizes, length, 9, keys);
  REQUIRE(cropped.shape() == Shape({items, length, bins}));
  const std::vector<float> got = cropped.to_vector<float>();
  bool moved = false;
  for (int64_t n = 0; n < items; ++n) {
    const std::span<const float> item(values.data() + n * steps * bins,
                                      size_t(sizes[size_t(n)] * bins));
    const Crop want = random_crop(item, length, 9, keys[size_t(n)], bins);
    moved = moved || want.offset > 0;
    for (int64_t k = 0; k < length * bins; ++k)
      CHECK(got[size_t(n * length * bins + k)] == want.values[size_t(k)]);
  }
  CHECK(moved);  // the 40- and 23-step items are cropped somewhere past their start
  CHECK_THROWS_WITH(random_crop_batch(batch, {40, 16}, length, 9, keys),
                    Contains("5 items but 2 sizes"));
  CHECK_THROWS_WITH(random_crop_batch(batch, {41, 16, 7, 0, 23}, length, 9, keys),
                    Contains("item 0 has 41 steps"));
  CHECK_THROWS_WITH(random_crop_batch(batch, sizes, 0, 9, keys),
                    Contains("length must be positive"));
}

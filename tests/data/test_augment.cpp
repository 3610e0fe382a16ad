// Augmentations keyed by (seed, epoch, item): SpecAugment's masks (widths, bounds, the fill,
// nothing else touched, strided frames), speed perturbation against a pure tone's
// arithmetic, gain jitter, random crops and pads, determinism per key with draws pinned
// against a Python transcription of the generator, and errors that name the option.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numbers>
#include <numeric>
#include <set>
#include <span>
#include <vector>

#include "base/error.h"
#include "data/augment/augment_key.h"
#include "data/augment/gain_jitter.h"
#include "data/augment/image_jitter.h"
#include "data/augment/random_crop.h"
#include "data/augment/spec_augment.h"
#include "data/augment/speed_perturb.h"
#include "engine/tensor.h"

using namespace sonata;
using Catch::Contains;

namespace {

// [T, F] with every value distinct and positive, so a mask of 0 is unmistakable.
std::vector<float> ramp(int64_t steps, int64_t bins) {
  std::vector<float> values(size_t(steps * bins));
  for (size_t i = 0; i < values.size(); ++i) values[i] = 1.0f + float(i);
  return values;
}

Tensor frames_of(const std::vector<float>& values, int64_t steps, int64_t bins) {
  return from_vector(values, {steps, bins});
}

struct Masked {
  std::vector<int64_t> rows, columns;  // wholly equal to the fill
  bool other_values_kept = true;       // every element outside them unchanged
  bool only_fill_changed = true;       // every changed element equals the fill
};

Masked inspect(const std::vector<float>& before, const std::vector<float>& after, int64_t steps,
               int64_t bins, float fill) {
  Masked m;
  auto at = [&](const std::vector<float>& v, int64_t t, int64_t f) {
    return v[size_t(t * bins + f)];
  };
  for (int64_t t = 0; t < steps; ++t) {
    bool all = true;
    for (int64_t f = 0; f < bins; ++f) all &= at(after, t, f) == fill;
    if (all) m.rows.push_back(t);
  }
  for (int64_t f = 0; f < bins; ++f) {
    bool all = true;
    for (int64_t t = 0; t < steps; ++t) all &= at(after, t, f) == fill;
    if (all) m.columns.push_back(f);
  }
  const std::set<int64_t> rows(m.rows.begin(), m.rows.end());
  const std::set<int64_t> columns(m.columns.begin(), m.columns.end());
  for (int64_t t = 0; t < steps; ++t)
    for (int64_t f = 0; f < bins; ++f) {
      const bool masked = rows.count(t) || columns.count(f);
      if (!masked && at(after, t, f) != at(before, t, f)) m.other_values_kept = false;
      if (at(after, t, f) != at(before, t, f) && at(after, t, f) != fill)
        m.only_fill_changed = false;
    }
  return m;
}

bool contiguous_run(const std::vector<int64_t>& indices) {
  for (size_t i = 1; i < indices.size(); ++i)
    if (indices[i] != indices[i - 1] + 1) return false;
  return true;
}

}  // namespace

TEST_CASE("SpecAugment draws are pinned to the generator", "[augment]") {
  // From a Python transcription of the generator: stream augment_key(2, 7), blocks from
  // 1 << 32; freq width below(28) = 7, start below(74) = 69, time width below(41) = 35,
  // start below(66) = 21.
  CHECK(augment_key(2, 7) == ((uint64_t(2) << 40) | 7));
  const int64_t steps = 100, bins = 80;
  const std::vector<float> before = ramp(steps, bins);
  Tensor frames = frames_of(before, steps, bins);
  SpecAugmentOptions options;
  options.freq_masks = 1;
  options.time_masks = 1;
  spec_augment(frames, options, 5, augment_key(2, 7));
  const Masked m = inspect(before, frames.to_vector<float>(), steps, bins, 0.0f);
  std::vector<int64_t> columns(7), rows(35);
  std::iota(columns.begin(), columns.end(), 69);
  std::iota(rows.begin(), rows.end(), 21);
  CHECK(m.columns == columns);
  CHECK(m.rows == rows);
  CHECK(m.other_values_kept);
  CHECK(m.only_fill_changed);
}

TEST_CASE("SpecAugment masks have the promised widths and bounds", "[augment]") {
  const int64_t steps = 60, bins = 20;
  const std::vector<float> before = ramp(steps, bins);
  SECTION("frequency masks") {
    SpecAugmentOptions options;
    options.freq_masks = 1;
    options.freq_max_width = 4;
    options.time_masks = 0;
    options.mask_value = -3.5f;
    std::vector<int64_t> widths(5, 0);
    int64_t lowest_start = bins, highest_end = 0;
    for (int64_t item = 0; item < 2000; ++item) {
      Tensor frames = frames_of(before, steps, bins);
      spec_augment(frames, options, 1, augment_key(0, item));
      const Masked m = inspect(before, frames.to_vector<float>(), steps, bins, -3.5f);
      REQUIRE(m.rows.empty());
      REQUIRE(m.columns.size() <= 4);
      REQUIRE(contiguous_run(m.columns));
      REQUIRE(m.other_values_kept);
      REQUIRE(m.only_fill_changed);
      ++widths[m.columns.size()];
      if (!m.columns.empty()) {
        lowest_start = std::min(lowest_start, m.columns.front());
        highest_end = std::max(highest_end, m.columns.back());
      }
    }
    // Widths uniform over 0..4: 400 each, standard deviation ~18.
    for (const int64_t count : widths) CHECK(std::abs(count - 400) < 100);
    // Masks reach both edges.
    CHECK(lowest_start == 0);
    CHECK(highest_end == bins - 1);
  }
  SECTION("time masks, capped by time_max_fraction") {
    SpecAugmentOptions options;
    options.freq_masks = 0;
    options.time_masks = 1;
    options.time_max_width = 40;
    options.time_max_fraction = 0.1;  // floor(0.1 * 60) = 6 frames at most
    int64_t widest = 0;
    for (int64_t item = 0; item < 500; ++item) {
      Tensor frames = frames_of(before, steps, bins);
      spec_augment(frames, options, 2, augment_key(1, item));
      const Masked m = inspect(before, frames.to_vector<float>(), steps, bins, 0.0f);
      REQUIRE(m.columns.empty());
      REQUIRE(contiguous_run(m.rows));
      REQUIRE(m.other_values_kept);
      widest = std::max(widest, int64_t(m.rows.size()));
    }
    CHECK(widest == 6);
  }
  SECTION("two of each, widths clamped to the item") {
    SpecAugmentOptions options;  // 2 x 27 bins on 20 bins, 2 x 40 frames on 60
    for (int64_t item = 0; item < 200; ++item) {
      Tensor frames = frames_of(before, steps, bins);
      spec_augment(frames, options, 3, augment_key(4, item));
      const Masked m = inspect(before, frames.to_vector<float>(), steps, bins, 0.0f);
      // Masked rows then cover every column and vice versa; otherwise at most two runs each.
      if (int64_t(m.rows.size()) < steps) CHECK(m.columns.size() <= 2 * 20);
      if (int64_t(m.columns.size()) < bins) CHECK(m.rows.size() <= 2 * 40);
      CHECK(m.other_values_kept);
      CHECK(m.only_fill_changed);
    }
  }
}

TEST_CASE("SpecAugment is the same for the same key only", "[augment]") {
  const int64_t steps = 120, bins = 40;
  const std::vector<float> before = ramp(steps, bins);
  const SpecAugmentOptions options;
  auto augmented = [&](uint64_t seed, uint64_t key) {
    Tensor frames = frames_of(before, steps, bins);
    spec_augment(frames, options, seed, key);
    return frames.to_vector<float>();
  };
  CHECK(augmented(9, augment_key(3, 11)) == augmented(9, augment_key(3, 11)));
  CHECK(augmented(9, augment_key(3, 11)) != augmented(9, augment_key(3, 12)));
  CHECK(augmented(9, augment_key(3, 11)) != augmented(9, augment_key(4, 11)));
  CHECK(augmented(9, augment_key(3, 11)) != augmented(10, augment_key(3, 11)));
}

TEST_CASE("SpecAugment without masks leaves the frames alone", "[augment]") {
  const std::vector<float> before = ramp(30, 8);
  SpecAugmentOptions none;
  none.freq_masks = 0;
  none.time_masks = 0;
  Tensor frames = frames_of(before, 30, 8);
  spec_augment(frames, none, 1, 2);
  CHECK(frames.to_vector<float>() == before);
  SpecAugmentOptions zero_width;
  zero_width.freq_max_width = 0;
  zero_width.time_max_width = 0;
  spec_augment(frames, zero_width, 1, 2);
  CHECK(frames.to_vector<float>() == before);
}

TEST_CASE("SpecAugment fills with the item's mean on request", "[augment]") {
  const int64_t steps = 50, bins = 10;
  const std::vector<float> before = ramp(steps, bins);  // 1 .. 500: mean 250.5 exactly
  SpecAugmentOptions options;
  options.mask_with_mean = true;
  options.freq_max_width = 3;
  options.time_max_width = 10;
  Tensor frames = frames_of(before, steps, bins);
  spec_augment(frames, options, 4, augment_key(0, 1));
  const Masked m = inspect(before, frames.to_vector<float>(), steps, bins, 250.5f);
  CHECK(m.rows.size() + m.columns.size() > 0);
  CHECK(m.other_values_kept);
  CHECK(m.only_fill_changed);
}

TEST_CASE("SpecAugment masks a strided view as its contiguous copy", "[augment]") {
  // A [T, F] view of an [F, T] block (torchaudio's layout, transposed) gets the same masks.
  const int64_t steps = 70, bins = 16;
  const std::vector<float> before = ramp(steps, bins);
  Tensor dense = frames_of(before, steps, bins);
  Tensor transposed_storage = dense.t().contiguous();  // [F, T]
  Tensor view = transposed_storage.t();                // [T, F], strides (1, T)
  REQUIRE(!view.is_contiguous());
  const SpecAugmentOptions options;
  spec_augment(dense, options, 6, augment_key(1, 1));
  spec_augment(view, options, 6, augment_key(1, 1));
  CHECK(view.contiguous().to_vector<float>() == dense.to_vector<float>());
  CHECK(dense.to_vector<float>() != before);
}

TEST_CASE("Speed perturbation changes length and pitch by the factor", "[augment]") {
  const int64_t rate = 16000, length = 16000;
  const double tone = 440.0;
  std::vector<float> clip(static_cast<size_t>(length));
  for (int64_t n = 0; n < length; ++n)
    clip[size_t(n)] = float(0.5 * std::sin(2 * std::numbers::pi * tone * double(n) / rate));
  CHECK(speed_perturb(clip, rate, 1.0) == clip);
  // ceil(length / factor): 17777.8 -> 17778 and 14545.5 -> 14546.
  CHECK(speed_perturb(clip, rate, 0.9).size() == 17778);
  CHECK(speed_perturb(clip, rate, 1.1).size() == 14546);
  CHECK(speed_perturb(std::vector<float>(10, 0.0f), 8000, 1.1).size() == 10);  // 9.09 -> 10
  // Played 1.1 times faster, the tone is 484 Hz: compare away from the filter's edges.
  for (const double factor : {0.9, 1.1}) {
    INFO("factor " << factor);
    const std::vector<float> fast = speed_perturb(clip, rate, factor);
    double worst = 0;
    for (size_t n = 200; n + 200 < fast.size(); ++n) {
      const double expected =
          0.5 * std::sin(2 * std::numbers::pi * tone * factor * double(n) / rate);
      worst = std::max(worst, std::abs(double(fast[n]) - expected));
    }
    CHECK(worst < 2e-3);
  }
}

TEST_CASE("Speed factors are chosen evenly and by key", "[augment]") {
  const std::vector<double> factors = {0.9, 1.0, 1.1};
  // Pinned: from the Python transcription, below(3) on stream augment_key(2, 7), blocks
  // from 2 << 32, is 2.
  CHECK(choose_speed_factor(factors, 5, augment_key(2, 7)) == 1.1);
  std::vector<int64_t> counts(3, 0);
  for (int64_t item = 0; item < 3000; ++item) {
    const double factor = choose_speed_factor(factors, 1, augment_key(0, item));
    CHECK(factor == choose_speed_factor(factors, 1, augment_key(0, item)));
    ++counts[size_t(std::find(factors.begin(), factors.end(), factor) - factors.begin())];
  }
  // 1000 each, standard deviation ~26.
  for (const int64_t count : counts) CHECK(std::abs(count - 1000) < 130);
}

TEST_CASE("Gain jitter scales by a dB gain within the bound", "[augment]") {
  const std::vector<float> clip = {0.5f, -0.25f, 0.125f, 1.0f};
  std::vector<float> scaled = clip;
  const double db = gain_jitter(scaled, 6.0, 5, augment_key(2, 7));
  // Pinned: -6 + 12 * u with u the top 53 bits of the first word of the gain stream.
  CHECK(db == Approx(1.9431372456019513).epsilon(1e-14));
  for (size_t i = 0; i < clip.size(); ++i)
    CHECK(scaled[i] == Approx(clip[i] * std::pow(10.0, db / 20.0)).epsilon(1e-6));
  double lowest = 0, highest = 0;
  for (int64_t item = 0; item < 1000; ++item) {
    std::vector<float> samples = clip;
    const double gain = gain_jitter(samples, 6.0, 1, augment_key(0, item));
    REQUIRE(gain >= -6.0);
    REQUIRE(gain < 6.0);
    lowest = std::min(lowest, gain);
    highest = std::max(highest, gain);
  }
  CHECK(lowest < -5.9);
  CHECK(highest > 5.9);
  std::vector<float> untouched = clip;
  CHECK(gain_jitter(untouched, 0.0, 1, 2) == 0.0);
  CHECK(untouched == clip);
}

TEST_CASE("Random crops stay inside the clip and pads add zeros at the end", "[augment]") {
  std::vector<float> clip(100);
  std::iota(clip.begin(), clip.end(), 0.0f);
  // Pinned: below(71) on the crop stream of augment_key(2, 7) is 62.
  const Crop pinned = random_crop(clip, 30, 5, augment_key(2, 7));
  CHECK(pinned.offset == 62);
  std::vector<int64_t> counts(71, 0);
  for (int64_t item = 0; item < 7100; ++item) {
    const Crop crop = random_crop(clip, 30, 3, augment_key(1, item));
    REQUIRE(crop.offset >= 0);
    REQUIRE(crop.offset <= 70);
    REQUIRE(crop.values.size() == 30);
    for (size_t i = 0; i < 30; ++i) REQUIRE(crop.values[i] == float(crop.offset + int64_t(i)));
    ++counts[size_t(crop.offset)];
  }
  // Every start is possible, both ends included (100 expected each).
  CHECK(*std::min_element(counts.begin(), counts.end()) > 50);
  // Shorter clips are padded with zeros at the end; equal lengths are copied.
  const Crop padded = random_crop(std::span<const float>(clip).first(20), 30, 3, 4);
  CHECK(padded.offset == 0);
  for (size_t i = 0; i < 30; ++i) CHECK(padded.values[i] == (i < 20 ? float(i) : 0.0f));
  CHECK(random_crop(std::span<const float>(clip).first(30), 30, 3, 4).values ==
        std::vector<float>(clip.begin(), clip.begin() + 30));
  // Frames [10, 3]: whole rows are cropped.
  const Crop rows = random_crop(std::span<const float>(clip).first(30), 4, 3, 4, 3);
  REQUIRE(rows.values.size() == 12);
  CHECK(rows.offset <= 6);
  for (size_t i = 0; i < 12; ++i) CHECK(rows.values[i] == float(rows.offset * 3 + int64_t(i)));
}

TEST_CASE("Augmentation errors name the option", "[augment]") {
  Tensor frames = frames_of(ramp(10, 4), 10, 4);
  SpecAugmentOptions bad;
  bad.freq_masks = -1;
  REQUIRE_THROWS_WITH(spec_augment(frames, bad, 0, 0), Contains("freq_masks"));
  bad = {};
  bad.time_max_width = -2;
  REQUIRE_THROWS_WITH(spec_augment(frames, bad, 0, 0), Contains("time_max_width"));
  bad = {};
  bad.time_max_fraction = 0;
  REQUIRE_THROWS_WITH(spec_augment(frames, bad, 0, 0), Contains("time_max_fraction"));
  Tensor three_d = from_vector(ramp(2, 12), {2, 3, 4});
  REQUIRE_THROWS_WITH(spec_augment(three_d, {}, 0, 0), Contains("[T, F]"));
  Tensor doubles = frames.to(DType::f64);
  REQUIRE_THROWS_WITH(spec_augment(doubles, {}, 0, 0), Contains("float32"));
  const std::vector<float> clip(10, 0.0f);
  REQUIRE_THROWS_WITH(speed_perturb(clip, 16000, 0.0), Contains("factor"));
  REQUIRE_THROWS_WITH(speed_perturb(clip, 0, 1.1), Contains("sample_rate"));
  REQUIRE_THROWS_WITH(choose_speed_factor(std::vector<double>{}, 0, 0), Contains("factors"));
  std::vector<float> samples = clip;
  REQUIRE_THROWS_WITH(gain_jitter(samples, -1.0, 0, 0), Contains("max_db"));
  REQUIRE_THROWS_WITH(random_crop(clip, 0, 0, 0), Contains("length"));
  REQUIRE_THROWS_WITH(random_crop(clip, 4, 0, 0, 3), Contains("step"));
  REQUIRE_THROWS_WITH(augment_key(-1, 0), Contains("epoch"));
  REQUIRE_THROWS_WITH(augment_key(0, int64_t(1) << 40), Contains("item"));
}

TEST_CASE("image jitter: brightness scales the [0, 1] image and clamps it", "[augment]") {
  // x in [-1, 1] is u = (x + 1) / 2 in [0, 1]: black stays black, mid-grey scales, white clips
  // at 1 when the factor is above 1.
  for (uint64_t key = 0; key < 50; ++key) {
    std::vector<float> image{-1.0f, 0.0f, 1.0f, -0.5f};
    const JitterFactors f = image_jitter(image, {.brightness = 0.4}, 7, key);
    INFO("key " << key << ", brightness " << f.brightness);
    CHECK(f.contrast == 1.0);
    CHECK(f.brightness >= 0.6);
    CHECK(f.brightness <= 1.4);
    CHECK(image[0] == -1.0f);
    CHECK(image[1] == Approx(std::min(0.5 * f.brightness, 1.0) * 2 - 1).margin(1e-6));
    CHECK(image[2] == Approx(std::min(f.brightness, 1.0) * 2 - 1).margin(1e-6));
    CHECK(image[3] == Approx(std::min(0.25 * f.brightness, 1.0) * 2 - 1).margin(1e-6));
  }
}

TEST_CASE("image jitter: contrast keeps the mean and scales the spread", "[augment]") {
  // Values near mid-grey never clip: the mean stays, deviations from it scale by c.
  std::vector<float> original;
  for (int i = 0; i < 64; ++i) original.push_back(float(0.2 * std::sin(0.3 * i)));
  double mean_in = 0;
  for (float x : original) mean_in += x;
  mean_in /= double(original.size());
  std::set<double> seen;
  for (uint64_t key = 0; key < 40; ++key) {
    std::vector<float> image = original;
    const JitterFactors f = image_jitter(image, {.contrast = 0.5}, 3, key);
    seen.insert(f.contrast);
    CHECK(f.brightness == 1.0);
    CHECK(f.contrast >= 0.5);
    CHECK(f.contrast <= 1.5);
    double mean_out = 0;
    for (float x : image) mean_out += x;
    mean_out /= double(image.size());
    CHECK(mean_out == Approx(mean_in).margin(1e-6));
    for (size_t i = 0; i < image.size(); ++i)
      CHECK(image[i] - mean_out == Approx(f.contrast * (original[i] - mean_in)).margin(1e-5));
  }
  CHECK(seen.size() == 40);  // a fresh factor per key
}

TEST_CASE("image jitter: off, repeatable per key, and bad settings", "[augment]") {
  std::vector<float> image{-0.3f, 0.1f, 0.7f};
  const std::vector<float> original = image;
  image_jitter(image, {}, 1, 2);
  CHECK(image == original);
  std::vector<float> a = original, b = original, c = original;
  image_jitter(a, {.brightness = 0.3, .contrast = 0.3}, 1, augment_key(2, 5));
  image_jitter(b, {.brightness = 0.3, .contrast = 0.3}, 1, augment_key(2, 5));
  image_jitter(c, {.brightness = 0.3, .contrast = 0.3}, 1, augment_key(3, 5));
  CHECK(a == b);
  CHECK(a != c);
  CHECK_THROWS_WITH(image_jitter(image, {.brightness = -1}, 1, 2),
                    Catch::Contains("brightness must be finite and not negative"));
  CHECK_THROWS_WITH(image_jitter(image, {.contrast = NAN}, 1, 2),
                    Catch::Contains("contrast must be finite"));
}

#include "bench/synthetic_spectrograms.h"

#include <algorithm>
#include <numeric>
#include <random>

#include "base/error.h"

namespace sonata::bench {
namespace {

// Brightness of column t of W under temporal pattern p, in [0, 1].
float pattern_value(int64_t pattern, int64_t t, int64_t width, int64_t phase, int64_t start) {
  switch (pattern) {
    case 0:  // steady
      return 1.0f;
    case 1: {  // pulses: on and off every eighth of the width
      const int64_t period = std::max<int64_t>(1, width / 8);
      return ((t + phase) / period) % 2 == 0 ? 1.0f : 0.0f;
    }
    case 2:  // a rise from silence to full
      return float(t + 1) / float(width);
    default:  // one burst a quarter of the width long
      return t >= start && t < start + std::max<int64_t>(1, width / 4) ? 1.0f : 0.0f;
  }
}

}  // namespace

SyntheticImages synthetic_spectrograms(int64_t items, int64_t classes, int64_t channels,
                                       int64_t size, uint64_t seed) {
  const int64_t bands = (classes + 3) / 4;
  SONATA_CHECK(items > 0 && classes > 1 && channels > 0, "synthetic_spectrograms: ", items,
               " items of ", classes, " classes and ", channels,
               " channels: each must be positive, classes at least 2");
  SONATA_CHECK(size >= 2 * bands && size >= 8, "synthetic_spectrograms: images of ", size,
               " pixels cannot hold ", bands, " frequency bands (at least ",
               std::max<int64_t>(8, 2 * bands), " needed)");
  SyntheticImages set{items, channels, size, {}, {}};
  set.pixels.resize(size_t(items * channels * size * size));
  set.labels.resize(size_t(items));
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> noise(0.0f, 0.5f);
  std::uniform_real_distribution<float> amplitude(1.0f, 2.0f);
  const int64_t band_rows = size / bands, quarter = std::max<int64_t>(1, size / 4);
  for (int64_t i = 0; i < items; ++i) {
    const int64_t label = i % classes, band = label % bands, pattern = (label / bands) % 4;
    set.labels[size_t(i)] = label;
    // Per image: the band moves by up to a quarter of its height, the pulses' phase and the
    // burst's start vary, and so does the brightness.
    const int64_t shift =
        std::uniform_int_distribution<int64_t>(-band_rows / 4, band_rows / 4)(rng);
    const int64_t top = std::clamp<int64_t>(band * band_rows + shift, 0, size - band_rows);
    const int64_t phase = std::uniform_int_distribution<int64_t>(0, size)(rng);
    const int64_t start = std::uniform_int_distribution<int64_t>(0, size - quarter)(rng);
    const float bright = amplitude(rng);
    float* image = set.pixels.data() + i * channels * size * size;
    for (int64_t c = 0; c < channels; ++c)
      for (int64_t r = 0; r < size; ++r) {
        const bool lit = r >= top && r < top + band_rows;
        for (int64_t t = 0; t < size; ++t) {
          const float signal = lit ? bright * pattern_value(pattern, t, size, phase, start) : 0.0f;
          image[(c * size + r) * size + t] = signal + noise(rng);
        }
      }
  }
  return set;
}

ImageBatch gather_images(const SyntheticImages& set, const std::vector<int64_t>& order,
                         int64_t first, int64_t count, Device device) {
  SONATA_CHECK(first >= 0 && count > 0 && first + count <= int64_t(order.size()),
               "gather_images: rows ", first, "..", first + count, " outside the order's ",
               order.size());
  const int64_t image = set.channels * set.size * set.size;
  std::vector<float> pixels(static_cast<size_t>(count * image));
  std::vector<int64_t> labels(static_cast<size_t>(count));
  for (int64_t n = 0; n < count; ++n) {
    const int64_t item = order[size_t(first + n)];
    std::copy_n(set.pixels.begin() + item * image, image, pixels.begin() + n * image);
    labels[size_t(n)] = set.labels[size_t(item)];
  }
  return {from_vector(pixels, {count, set.channels, set.size, set.size}).to(device),
          from_vector(labels, {count}, device)};
}

std::vector<int64_t> shuffled_order(int64_t items, uint64_t seed) {
  std::vector<int64_t> order(static_cast<size_t>(items));
  std::iota(order.begin(), order.end(), int64_t(0));
  std::mt19937_64 rng(seed);
  std::shuffle(order.begin(), order.end(), rng);
  return order;
}

}  // namespace sonata::bench

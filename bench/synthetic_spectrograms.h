#pragma once
// A small deterministic classification set of spectrogram-like images, so that a benchmark
// can train for a few epochs and end with an accuracy that means something, without data
// files. Rows are frequency, columns time. Class c lights frequency band c % B of B =
// ceil(classes / 4) bands with temporal pattern (c / B) % 4: steady, pulses, a rise over
// time, or one burst; the band's place, the pattern's phase and the amplitude vary per image,
// over unit Gaussian noise. The same (items, classes, sizes, seed) give the same set on every
// machine built with the same standard library; another seed gives a held-out set.
#include <cstdint>
#include <vector>

#include "engine/device.h"
#include "engine/tensor.h"

namespace sonata::bench {

struct SyntheticImages {
  int64_t items = 0, channels = 0, size = 0;  // images of channels x size x size
  std::vector<float> pixels;                  // [items, channels, size, size]
  std::vector<int64_t> labels;                // [items], item i of class i % classes
};

SyntheticImages synthetic_spectrograms(int64_t items, int64_t classes, int64_t channels,
                                       int64_t size, uint64_t seed);

struct ImageBatch {
  Tensor x;       // [count, channels, size, size], f32
  Tensor labels;  // [count], i64
};

// The images order[first], ..., order[first + count - 1] as one batch on `device`.
ImageBatch gather_images(const SyntheticImages& set, const std::vector<int64_t>& order,
                         int64_t first, int64_t count, Device device);

// 0, 1, ..., items - 1 shuffled by `seed` (the same on every rank).
std::vector<int64_t> shuffled_order(int64_t items, uint64_t seed);

}  // namespace sonata::bench

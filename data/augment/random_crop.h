#pragma once
// Fixed-length slices for classification (a 3 s window of a 30 s GTZAN track, or a fixed
// number of spectrogram frames): a crop whose start is uniform over every position that
// fits, drawn from (seed, key) (see augment_key.h); a shorter clip is padded with zeros at
// its end instead. Works on waveforms (step 1) and on row-major [T, F] frames (step F),
// cropping whole steps.
#include <cstdint>
#include <span>
#include <vector>

namespace sonata {

struct Crop {
  std::vector<float> values;  // length * step
  int64_t offset = 0;         // the first step taken; 0 when padded
};

// The start of a crop of `length` steps from `size`: uniform in [0, size - length], 0 when
// size <= length.
int64_t random_crop_offset(int64_t size, int64_t length, uint64_t seed, uint64_t key);

// values holds size * step floats. Throws naming a non-positive length or step, or values
// that are not a whole number of steps.
Crop random_crop(std::span<const float> values, int64_t length, uint64_t seed, uint64_t key,
                 int64_t step = 1);

}  // namespace sonata

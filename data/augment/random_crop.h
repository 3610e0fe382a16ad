#pragma once
// Fixed-length slices for classification (a 3 s window of a 30 s GTZAN track, or a fixed
// number of spectrogram frames): a crop whose start is uniform over every position that
// fits, drawn from (seed, key) (see augment_key.h); a shorter clip is padded with zeros at
// its end instead. Works on waveforms (step 1) and on row-major [T, F] frames (step F),
// cropping whole steps, one item on the host or a padded batch on any device.
#include <cstdint>
#include <span>
#include <vector>

#include "engine/tensor.h"

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

// The same crops for a padded batch on any device: batch [N, S, ...] (float32; the steps
// along dim 1, a step being the trailing dims), item n holding sizes[n] valid steps, cropped
// with (seed, keys[n]) to [N, length, ...]. Offsets are drawn on the host; the crops are
// copies on the batch's device, so each item equals random_crop's values bit for bit.
// Throws naming a bad length, size or key count.
Tensor random_crop_batch(const Tensor& batch, const std::vector<int64_t>& sizes, int64_t length,
                         uint64_t seed, const std::vector<uint64_t>& keys);

}  // namespace sonata

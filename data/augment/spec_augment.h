#pragma once
// SpecAugment's frequency and time masking (Park et al. 2019), as torchaudio's
// FrequencyMasking / TimeMasking apply it to one item: each mask draws an integer width
// uniform in [0, max width] and a start uniform in [0, size - width], and sets those rows
// (time) or columns (frequency) to the mask value; masks may overlap. Frequency masks are
// drawn first, then time masks, all from (seed, key) (see augment_key.h).
//
// Widths include max width itself, as the paper states; torchaudio (0.13) floors
// rand * mask_param and so never reaches it. time_max_fraction is torchaudio's TimeMasking p:
// the time width is also at most floor(p * T).
//
// spec_augment_batch masks a padded batch on any device with the same masks: each item's are
// drawn on the host (draw_spec_augment, which spec_augment uses too), sent to the device as
// [N, T] and [N, F] flags, and applied with `where`, so the result equals spec_augment's item
// by item, bit for bit on the CPU and on CUDA (a selection, no arithmetic) except for the
// mask_with_mean fill, which CUDA sums in another order (within float rounding).
#include <cstdint>
#include <vector>

#include "engine/tensor.h"

namespace sonata {

struct SpecAugmentOptions {
  int64_t freq_masks = 2;
  int64_t freq_max_width = 27;  // clamped to the number of bins F
  int64_t time_masks = 2;
  int64_t time_max_width = 40;     // clamped to the number of frames T
  double time_max_fraction = 1.0;  // p in (0, 1]; 1.0 = no limit beyond time_max_width
  float mask_value = 0.0f;
  // Fill with the item's mean (over all of it, before masking) instead of mask_value, so a
  // normalised feature's masks carry no artificial level.
  bool mask_with_mean = false;
};

// frames: [T, F] float32 on the CPU (any strides), masked in place. Throws naming the option
// or the tensor's property that is wrong.
void spec_augment(Tensor& frames, const SpecAugmentOptions& options, uint64_t seed, uint64_t key);

// One mask: `width` rows (time) or columns (frequency) from `start`.
struct SpecAugmentMask {
  int64_t start = 0, width = 0;
};
struct SpecAugmentMasks {
  std::vector<SpecAugmentMask> freq, time;  // in the order drawn
};

// The masks spec_augment draws for a [steps, bins] item with (seed, key): none when either
// size is 0. Throws naming a bad option.
SpecAugmentMasks draw_spec_augment(int64_t steps, int64_t bins, const SpecAugmentOptions& options,
                                   uint64_t seed, uint64_t key);

// features: [N, T, F], or [N, 1, T, F] as SpeechTask's batches, float32 on any device; item n
// is its first frames[n] rows (the rest is padding, left as it is) and is masked as
// spec_augment masks those rows with (seed, keys[n]). Returns the masked copy (features
// itself when no masks are asked for). Throws naming the option or argument that is wrong.
Tensor spec_augment_batch(const Tensor& features, const std::vector<int64_t>& frames,
                          const SpecAugmentOptions& options, uint64_t seed,
                          const std::vector<uint64_t>& keys);

}  // namespace sonata

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
#include <cstdint>

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

}  // namespace sonata

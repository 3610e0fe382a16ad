#pragma once
// A padded batch of sequences as the masked kernels see it (kernels/cpu/masked_batch_norm.h,
// kernels/cuda/masked_batch_norm.h): a contiguous [batch, channels, time, inner] block, where
// sample n's frames t < lengths[n] are valid and the rest is padding.
#include <cstdint>

#include "base/hd.h"

namespace sonata::kernels {

struct SequenceLayout {
  int64_t batch = 0, channels = 0, time = 0, inner = 1;

  SONATA_HD int64_t plane() const { return time * inner; }  // one (sample, channel)
  SONATA_HD int64_t numel() const { return batch * channels * time * inner; }
  // The sample and frame of element `at` of the whole block, and whether it is valid.
  SONATA_HD bool valid(int64_t at, const int64_t* lengths) const {
    const int64_t n = at / (channels * plane());
    const int64_t t = (at / inner) % time;
    return t < lengths[n];
  }
  SONATA_HD int64_t channel(int64_t at) const { return (at / plane()) % channels; }
};

}  // namespace sonata::kernels

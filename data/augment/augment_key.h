#pragma once
// Every augmentation draws from CounterRng (data/sampling/counter_rng.h) with the run's seed
// as the Philox key and the item's `key` as the stream, so an augmented item depends only on
// (seed, epoch, item): the same after a resume, on any loader thread, in any order.
// augment_key packs (epoch, item) into that stream without collisions; each augmentation
// starts at its own block (its Purpose in the counter's second word), so two augmentations
// of one item never share random numbers.
//
// Use a seed for augmentation other than the samplers' (e.g. seed + 1): both put small
// integers in the stream word.
#include <cstdint>

#include "data/sampling/counter_rng.h"

namespace sonata {

// epoch << 40 | item; epochs below 2^24 and items below 2^40 (checked).
uint64_t augment_key(int64_t epoch, int64_t item);

namespace augment {

enum class Purpose : uint64_t { spec_augment = 1, speed = 2, gain = 3, crop = 4, image = 5 };

// The generator one augmentation of one item draws from.
inline CounterRng rng_for(uint64_t seed, uint64_t key, Purpose purpose) {
  return CounterRng(seed, key, uint64_t(purpose) << 32);
}

}  // namespace augment
}  // namespace sonata

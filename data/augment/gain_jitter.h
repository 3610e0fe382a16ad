#pragma once
// Gain jitter: the clip scaled by 10^(dB / 20) with dB uniform in [-max_db, max_db], drawn
// from (seed, key) (see augment_key.h), so that a model does not learn the recording level.
#include <cstdint>
#include <span>

namespace sonata {

// Scales `samples` in place and returns the gain applied, in dB. max_db 0 leaves them as
// they are. Throws naming a negative or non-finite max_db.
double gain_jitter(std::span<float> samples, double max_db, uint64_t seed, uint64_t key);

}  // namespace sonata

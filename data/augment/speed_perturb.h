#pragma once
// Speed perturbation (Ko et al. 2015; Kaldi's and NeMo's SpeedPerturbation): the clip is
// played faster or slower, pitch and tempo together, by resampling it as if it had been
// recorded at rate * factor and converting that to rate. A factor above 1 shortens the clip:
// sonata::resample gives ceil(length / factor) samples (exactly, when rate * factor is an
// integer). The factor is one of a fixed set, chosen per item from (seed, key).
#include <cstdint>
#include <span>
#include <vector>

namespace sonata {

// The clip at `factor` times its speed. rate * factor is rounded to whole hertz (16000 *
// 0.9 = 14400 is exact); factor 1 returns the samples unchanged. Throws naming a
// non-positive factor or rate.
std::vector<float> speed_perturb(std::span<const float> samples, int64_t sample_rate,
                                 double factor);

// One of `factors`, each equally likely, from (seed, key) (see augment_key.h).
double choose_speed_factor(std::span<const double> factors, uint64_t seed, uint64_t key);

}  // namespace sonata

#include "data/augment/speed_perturb.h"

#include <cmath>

#include "base/error.h"
#include "data/audio/resample.h"
#include "data/augment/augment_key.h"

namespace sonata {

std::vector<float> speed_perturb(std::span<const float> samples, int64_t sample_rate,
                                 double factor) {
  SONATA_CHECK(factor > 0 && std::isfinite(factor), "speed_perturb: factor must be positive, got ",
               factor);
  SONATA_CHECK(sample_rate > 0, "speed_perturb: sample_rate must be positive, got ", sample_rate);
  const int64_t played_rate = std::llround(double(sample_rate) * factor);
  SONATA_CHECK(played_rate > 0, "speed_perturb: factor ", factor, " at ", sample_rate,
               " Hz rounds to a rate of 0 Hz");
  return resample(samples, played_rate, sample_rate);
}

double choose_speed_factor(std::span<const double> factors, uint64_t seed, uint64_t key) {
  SONATA_CHECK(!factors.empty(), "choose_speed_factor: the list of factors is empty");
  for (const double factor : factors)
    SONATA_CHECK(factor > 0 && std::isfinite(factor),
                 "choose_speed_factor: factors must be positive, got ", factor);
  CounterRng rng = augment::rng_for(seed, key, augment::Purpose::speed);
  return factors[rng.below(factors.size())];
}

}  // namespace sonata

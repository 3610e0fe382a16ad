#include "data/augment/gain_jitter.h"

#include <cmath>

#include "base/error.h"
#include "data/augment/augment_key.h"

namespace sonata {

double gain_jitter(std::span<float> samples, double max_db, uint64_t seed, uint64_t key) {
  SONATA_CHECK(max_db >= 0 && std::isfinite(max_db),
               "gain_jitter: max_db must be finite and not negative, got ", max_db);
  if (max_db == 0) return 0;
  CounterRng rng = augment::rng_for(seed, key, augment::Purpose::gain);
  const double db = rng.uniform(-max_db, max_db);
  const float scale = float(std::pow(10.0, db / 20.0));
  for (float& sample : samples) sample *= scale;
  return db;
}

}  // namespace sonata

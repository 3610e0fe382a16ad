#include "data/augment/image_jitter.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"
#include "data/augment/augment_key.h"

namespace sonata {

JitterFactors image_jitter(std::span<float> image, const ImageJitter& jitter, uint64_t seed,
                           uint64_t key) {
  SONATA_CHECK(jitter.brightness >= 0 && std::isfinite(jitter.brightness),
               "image_jitter: brightness must be finite and not negative, got ", jitter.brightness);
  SONATA_CHECK(jitter.contrast >= 0 && std::isfinite(jitter.contrast),
               "image_jitter: contrast must be finite and not negative, got ", jitter.contrast);
  JitterFactors factors;
  if ((jitter.brightness == 0 && jitter.contrast == 0) || image.empty()) return factors;
  CounterRng rng = augment::rng_for(seed, key, augment::Purpose::image);
  // Both factors are drawn whatever is on, so turning one off leaves the other's draw alone.
  const double b = rng.uniform(std::max(0.0, 1 - jitter.brightness), 1 + jitter.brightness);
  const double c = rng.uniform(std::max(0.0, 1 - jitter.contrast), 1 + jitter.contrast);
  if (jitter.brightness > 0) factors.brightness = b;
  if (jitter.contrast > 0) factors.contrast = c;
  double sum = 0;
  for (float& x : image) {
    const double u = std::clamp((double(x) + 1) / 2 * factors.brightness, 0.0, 1.0);
    x = float(u);  // kept in [0, 1] until the contrast step
    sum += u;
  }
  const double mean = sum / double(image.size());
  for (float& x : image) {
    const double u =
        std::clamp(factors.contrast * double(x) + (1 - factors.contrast) * mean, 0.0, 1.0);
    x = float(u * 2 - 1);
  }
  return factors;
}

}  // namespace sonata

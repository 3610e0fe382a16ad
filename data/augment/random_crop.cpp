#include "data/augment/random_crop.h"

#include <algorithm>

#include "base/error.h"
#include "data/augment/augment_key.h"

namespace sonata {

int64_t random_crop_offset(int64_t size, int64_t length, uint64_t seed, uint64_t key) {
  SONATA_CHECK(length > 0, "random_crop: length must be positive, got ", length);
  SONATA_CHECK(size >= 0, "random_crop: size must not be negative, got ", size);
  if (size <= length) return 0;
  CounterRng rng = augment::rng_for(seed, key, augment::Purpose::crop);
  return int64_t(rng.below(uint64_t(size - length) + 1));
}

Crop random_crop(std::span<const float> values, int64_t length, uint64_t seed, uint64_t key,
                 int64_t step) {
  SONATA_CHECK(step > 0, "random_crop: step must be positive, got ", step);
  SONATA_CHECK(int64_t(values.size()) % step == 0, "random_crop: ", values.size(),
               " values are not a whole number of steps of ", step);
  const int64_t size = int64_t(values.size()) / step;
  Crop crop;
  crop.offset = random_crop_offset(size, length, seed, key);
  crop.values.assign(size_t(length * step), 0.0f);
  const int64_t taken = std::min(length, size - crop.offset);
  std::copy_n(values.begin() + crop.offset * step, taken * step, crop.values.begin());
  return crop;
}

}  // namespace sonata

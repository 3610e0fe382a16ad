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

Tensor random_crop_batch(const Tensor& batch, const std::vector<int64_t>& sizes, int64_t length,
                         uint64_t seed, const std::vector<uint64_t>& keys) {
  SONATA_CHECK(batch.defined() && batch.dim() >= 2 && batch.dtype() == DType::f32,
               "random_crop_batch: batch must be float32 [N, S, ...], got ",
               batch.defined() ? shape_str(batch.shape()) : std::string("undefined"));
  SONATA_CHECK(length > 0, "random_crop_batch: length must be positive, got ", length);
  const int64_t items = batch.size(0), steps = batch.size(1);
  SONATA_CHECK(int64_t(sizes.size()) == items && int64_t(keys.size()) == items,
               "random_crop_batch: ", items, " items but ", sizes.size(), " sizes and ",
               keys.size(), " keys");
  Shape shape = batch.shape();
  shape[1] = length;
  Tensor out = zeros(shape, batch.options());
  for (int64_t n = 0; n < items; ++n) {
    const int64_t size = sizes[size_t(n)];
    SONATA_CHECK(size >= 0 && size <= steps, "random_crop_batch: item ", n, " has ", size,
                 " steps, outside [0, ", steps, "]");
    const int64_t offset = random_crop_offset(size, length, seed, keys[size_t(n)]);
    const int64_t taken = std::min(length, size - offset);
    if (taken > 0)
      out.select(0, n)
          .slice(0, 0, taken)
          .copy_(batch.select(0, n).slice(0, offset, offset + taken));
  }
  return out;
}

}  // namespace sonata

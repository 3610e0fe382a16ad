#include "data/augment/image_jitter.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"
#include "data/augment/augment_key.h"
#include "kernels/cpu/image_jitter.h"
#if SONATA_WITH_CUDA
#include "engine/cuda/stream.h"
#include "kernels/cuda/image_jitter.h"
#endif

namespace sonata {
namespace {

bool is_off(const ImageJitter& jitter) {
  return jitter.brightness == 0 && jitter.contrast == 0;
}

void check_jitter(const ImageJitter& jitter) {
  SONATA_CHECK(jitter.brightness >= 0 && std::isfinite(jitter.brightness),
               "image_jitter: brightness must be finite and not negative, got ", jitter.brightness);
  SONATA_CHECK(jitter.contrast >= 0 && std::isfinite(jitter.contrast),
               "image_jitter: contrast must be finite and not negative, got ", jitter.contrast);
}

}  // namespace

JitterFactors draw_image_jitter(const ImageJitter& jitter, uint64_t seed, uint64_t key) {
  check_jitter(jitter);
  JitterFactors factors;
  if (is_off(jitter)) return factors;
  CounterRng rng = augment::rng_for(seed, key, augment::Purpose::image);
  // Both factors are drawn whatever is on, so turning one off leaves the other's draw alone.
  const double b = rng.uniform(std::max(0.0, 1 - jitter.brightness), 1 + jitter.brightness);
  const double c = rng.uniform(std::max(0.0, 1 - jitter.contrast), 1 + jitter.contrast);
  if (jitter.brightness > 0) factors.brightness = b;
  if (jitter.contrast > 0) factors.contrast = c;
  return factors;
}

JitterFactors image_jitter(std::span<float> image, const ImageJitter& jitter, uint64_t seed,
                           uint64_t key) {
  const JitterFactors factors = draw_image_jitter(jitter, seed, key);
  if (is_off(jitter) || image.empty()) return factors;
  kernels::cpu::image_jitter(image.data(), 1, int64_t(image.size()), &factors.brightness,
                             &factors.contrast);
  return factors;
}

Tensor image_jitter_batch(const Tensor& images, const ImageJitter& jitter, uint64_t seed,
                          const std::vector<uint64_t>& keys) {
  check_jitter(jitter);
  SONATA_CHECK(images.dim() >= 1, "image_jitter_batch: images must be [N, ...], got a scalar");
  SONATA_CHECK(images.dtype() == DType::f32, "image_jitter_batch: images must be float32, got ",
               dtype_name(images.dtype()));
  const int64_t items = images.size(0);
  SONATA_CHECK(int64_t(keys.size()) == items, "image_jitter_batch: ", keys.size(),
               " keys for a batch of ", items);
  if (is_off(jitter) || images.numel() == 0) return images;
  std::vector<double> brightness, contrast;
  for (const uint64_t key : keys) {
    const JitterFactors factors = draw_image_jitter(jitter, seed, key);
    brightness.push_back(factors.brightness);
    contrast.push_back(factors.contrast);
  }
  Tensor out = empty(images.shape(), images.options());  // contiguous
  out.copy_(images);
  const int64_t size = images.numel() / items;
  if (out.device().is_cpu()) {
    kernels::cpu::image_jitter(out.data<float>(), items, size, brightness.data(), contrast.data());
    return out;
  }
#if SONATA_WITH_CUDA
  const TensorOptions factor_options = TensorOptions{}.with(DType::f64).with(out.device());
  // Freed on the current stream after the launch (stream-ordered), as every temporary.
  const Tensor b = from_vector(brightness, {items}, factor_options);
  const Tensor c = from_vector(contrast, {items}, factor_options);
  kernels::cuda::image_jitter(out.data<float>(), items, size, b.data<double>(), c.data<double>(),
                              current_stream(out.device().index));
  return out;
#else
  throw Error(str("image_jitter_batch: images on ", out.device().str(), " need a build with CUDA"));
#endif
}

}  // namespace sonata

// Batch augmentation on CUDA (data/augment/spec_augment.h's spec_augment_batch,
// data/augment/image_jitter.h's image_jitter_batch, kernels/cuda/image_jitter.h) against the
// same calls on the CPU, which tests/data/test_augment_batch.cpp holds to the per-item
// functions: SpecAugment with a constant fill equal (a selection), with the item's mean within
// float rounding; the jitter within 1e-6 (the mean summed in another order), over ragged items,
// images larger and smaller than one block, and each jitter setting alone.
#include <catch2/catch.hpp>

#include <random>
#include <vector>

#include "data/augment/augment_key.h"
#include "data/augment/image_jitter.h"
#include "data/augment/random_crop.h"
#include "data/augment/spec_augment.h"
#include "engine/tensor.h"
#include "tests/support/cuda_parity.h"

using namespace sonata;
using namespace sonata::testing;

namespace {

constexpr Tolerance kAugmentTolerance{1e-6, 1e-6};

Tensor uniform(const Shape& shape, float low, float high, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> draw(low, high);
  std::vector<float> values(size_t(shape_numel(shape)));
  for (float& v : values) v = draw(rng);
  return from_vector(values, shape);
}

std::vector<uint64_t> keys_for(int64_t items, int64_t epoch) {
  std::vector<uint64_t> keys;
  for (int64_t n = 0; n < items; ++n) keys.push_back(augment_key(epoch, 3 * n + 1));
  return keys;
}

}  // namespace

TEST_CASE("CUDA SpecAugment batch equals the CPU's", "[cuda][augment]") {
  const int64_t items = 6, steps = 300, bins = 80;
  const std::vector<int64_t> frames{300, 123, 0, 1, 299, 64};
  const Tensor features = uniform({items, 1, steps, bins}, -3.0f, 3.0f, 7);
  SpecAugmentOptions options;
  options.freq_masks = 2;
  options.freq_max_width = 27;
  options.time_masks = 4;
  options.time_max_width = 40;
  options.mask_value = 0.25f;
  options.mask_with_mean = GENERATE(false, true);
  INFO("mask_with_mean " << options.mask_with_mean);
  const std::vector<uint64_t> keys = keys_for(items, 2);
  const Tensor cpu = spec_augment_batch(features, frames, options, 3, keys);
  const Tensor gpu = spec_augment_batch(features.to(Device::cuda()), frames, options, 3, keys);
  REQUIRE(gpu.device().is_cuda());
  if (!options.mask_with_mean) {
    CHECK(gpu.to_vector<float>() == cpu.to_vector<float>());
  } else {
    const ParityResult result =
        compare_tensors(gpu.to(Device::cpu()), cpu, kAugmentTolerance, "spec_augment_batch");
    INFO(result.report);
    CHECK(result.ok);
  }
}

TEST_CASE("CUDA image jitter batch equals the CPU's", "[cuda][augment]") {
  const Shape shape = GENERATE(Shape{5, 3, 128, 128}, Shape{3, 1, 4, 5}, Shape{2, 1, 1, 300});
  const ImageJitter jitter =
      GENERATE(ImageJitter{0.4, 0.4}, ImageJitter{0.8, 0}, ImageJitter{0, 0.9});
  INFO(shape_str(shape) << ", brightness " << jitter.brightness << ", contrast "
                        << jitter.contrast);
  const Tensor images = uniform(shape, -1.0f, 1.0f, 13);
  const std::vector<uint64_t> keys = keys_for(shape[0], 5);
  const Tensor cpu = image_jitter_batch(images, jitter, 4, keys);
  const Tensor gpu = image_jitter_batch(images.to(Device::cuda()), jitter, 4, keys);
  REQUIRE(gpu.device().is_cuda());
  const ParityResult result =
      compare_tensors(gpu.to(Device::cpu()), cpu, kAugmentTolerance, "image_jitter_batch");
  INFO(result.report);
  CHECK(result.ok);
  // A strided view (one channel of three) is jittered as its contiguous copy.
  if (shape[1] == 3) {
    const Tensor on_device = images.to(Device::cuda()).slice(1, 1, 2);
    const ParityResult strided =
        compare_tensors(image_jitter_batch(on_device, jitter, 4, keys).to(Device::cpu()),
                        image_jitter_batch(images.slice(1, 1, 2).contiguous(), jitter, 4, keys),
                        kAugmentTolerance, "image_jitter_batch of a strided view");
    INFO(strided.report);
    CHECK(strided.ok);
  }
}

TEST_CASE("CUDA random crop batch equals the CPU's", "[cuda][augment]") {
  const int64_t items = 6, samples = 4000, length = 1600;
  const std::vector<int64_t> sizes{4000, 1600, 900, 0, 2500, 3999};
  const Tensor waves = uniform({items, samples}, -1.0f, 1.0f, 11);
  const std::vector<uint64_t> keys = keys_for(items, 4);
  const Tensor cpu = random_crop_batch(waves, sizes, length, 5, keys);
  const Tensor gpu = random_crop_batch(waves.to(Device::cuda()), sizes, length, 5, keys);
  REQUIRE(gpu.device().is_cuda());
  CHECK(gpu.to_vector<float>() == cpu.to_vector<float>());
}

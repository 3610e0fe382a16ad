#pragma once
// Brightness and contrast jitter for spectrogram images, as torchvision's
// ColorJitter(brightness, contrast) does it on the [0, 1] image before CCMusic's
// Normalize(0.5, 0.5): here the image is already normalised to [-1, 1], so it is mapped back
// to u = (x + 1) / 2, jittered, clamped to [0, 1] after each step, and mapped forward again.
//   brightness: u * b,                  b uniform in [max(0, 1 - brightness), 1 + brightness]
//   contrast:   c * u + (1 - c) * mean, c uniform in [max(0, 1 - contrast), 1 + contrast]
// with mean the image's mean after the brightness step (one channel: its gray level).
// torchvision draws the order of the two at random; here brightness always comes first.
// Factors are drawn from (seed, key) (see augment_key.h), so a jittered item depends only on
// (seed, epoch, item). The arithmetic is kernels/cpu/image_jitter.h (kernels/cuda/ on a GPU).
//
// image_jitter_batch jitters a batch on any device with the same factors, drawn on the host
// (draw_image_jitter, which image_jitter uses too) and sent to the device as [N] tensors:
// equal to image_jitter item by item, bit for bit on the CPU, within float rounding on CUDA.
#include <cstdint>
#include <span>
#include <vector>

#include "engine/tensor.h"

namespace sonata {

struct ImageJitter {
  double brightness = 0;  // 0: off
  double contrast = 0;    // 0: off
};

struct JitterFactors {
  double brightness = 1, contrast = 1;
};

// Jitters `image` (values in [-1, 1]) in place and returns the factors used. Throws naming a
// negative or non-finite setting.
JitterFactors image_jitter(std::span<float> image, const ImageJitter& jitter, uint64_t seed,
                           uint64_t key);

// The factors image_jitter uses for (seed, key): 1 for a setting that is off. Throws as
// image_jitter.
JitterFactors draw_image_jitter(const ImageJitter& jitter, uint64_t seed, uint64_t key);

// images: [N, ...] float32 on any device, item n (all of its C * H * W values, one image as
// image_jitter sees a span) jittered with (seed, keys[n]). Returns the jittered copy (images
// itself when both settings are off). Throws naming the setting or argument that is wrong.
Tensor image_jitter_batch(const Tensor& images, const ImageJitter& jitter, uint64_t seed,
                          const std::vector<uint64_t>& keys);

}  // namespace sonata

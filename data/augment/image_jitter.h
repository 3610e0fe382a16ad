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
// (seed, epoch, item).
#include <cstdint>
#include <span>

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

}  // namespace sonata

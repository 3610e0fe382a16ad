#pragma once
// Brightness then contrast jitter of images in [-1, 1] (data/augment/image_jitter.h states
// the definition and draws the factors), in place, in double:
//   u = clamp((x + 1) / 2 * brightness, 0, 1), stored as float;  mean = sum of u / size
//   x = float(clamp(contrast * u + (1 - contrast) * mean, 0, 1) * 2 - 1)
// The per-item image_jitter and the batch on the CPU both run this, so they agree bit for
// bit; kernels/cuda/image_jitter.h is its twin (the mean summed in another order).
#include <cstdint>

namespace sonata::kernels::cpu {

// images: [items, size] f32, contiguous; brightness, contrast: [items] factors.
void image_jitter(float* images, int64_t items, int64_t size, const double* brightness,
                  const double* contrast);

}  // namespace sonata::kernels::cpu

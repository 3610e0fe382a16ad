#pragma once
// Brightness then contrast jitter of images in [-1, 1] on a CUDA device: the twin of
// kernels/cpu/image_jitter.h (same formula, in double), with each image's mean summed by a
// block reduction instead of in order, so results agree within float rounding.
#include <cstdint>

#include <cuda_runtime_api.h>

namespace sonata::kernels::cuda {

// images: [items, size] f32, contiguous, on the device; brightness, contrast: [items] device
// factors. One block per image.
void image_jitter(float* images, int64_t items, int64_t size, const double* brightness,
                  const double* contrast, cudaStream_t stream);

}  // namespace sonata::kernels::cuda

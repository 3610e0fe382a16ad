// Image jitter: one block per image, two passes over it (brightness with the block's sum of
// the result, then contrast towards that mean), so the image is read twice and written twice.
#include "kernels/cuda/image_jitter.h"

#include "base/nvtx.h"
#include "kernels/cuda/launch.cuh"

namespace sonata::kernels::cuda {
namespace {

__device__ __forceinline__ double clamp01(double u) {
  return u < 0.0 ? 0.0 : (u > 1.0 ? 1.0 : u);
}

struct SumD {
  __device__ double operator()(double a, double b) const { return a + b; }
};

__global__ void __launch_bounds__(kBlockSize)
    image_jitter_kernel(float* images, int64_t size, const double* __restrict__ brightness,
                        const double* __restrict__ contrast) {
  __shared__ double scratch[kBlockSize / kWarpSize];
  float* image = images + int64_t(blockIdx.x) * size;
  const double b = brightness[blockIdx.x], c = contrast[blockIdx.x];
  double sum = 0;
  for (int64_t i = threadIdx.x; i < size; i += blockDim.x) {
    const double u = clamp01((double(image[i]) + 1) / 2 * b);
    image[i] = float(u);
    sum += u;
  }
  sum = warp_allreduce(sum, SumD{});
  const int warp = int(threadIdx.x) / kWarpSize, lane = int(threadIdx.x) % kWarpSize;
  if (lane == 0) scratch[warp] = sum;
  __syncthreads();
  double total = 0;
  for (int w = 0; w < int(blockDim.x) / kWarpSize; ++w) total += scratch[w];
  const double mean = total / double(size);
  // Each thread reads back the elements it wrote: the same grid-stride walk.
  for (int64_t i = threadIdx.x; i < size; i += blockDim.x)
    image[i] = float(clamp01(c * double(image[i]) + (1 - c) * mean) * 2 - 1);
}

}  // namespace

void image_jitter(float* images, int64_t items, int64_t size, const double* brightness,
                  const double* contrast, cudaStream_t stream) {
  SONATA_NVTX_RANGE("sonata::cuda::image_jitter");
  if (items <= 0 || size <= 0) return;
  SONATA_CHECK(items < (int64_t(1) << 31), "image_jitter: ", items,
               " images is too many for one grid");
  launch(image_jitter_kernel, unsigned(items), kBlockSize, 0, stream, images, size, brightness,
         contrast);
  CUDA_CHECK_LAUNCH();
}

}  // namespace sonata::kernels::cuda

#include "kernels/cuda/cqt.h"

#include "base/nvtx.h"
#include "kernels/cuda/launch.cuh"

namespace sonata::kernels::cuda {
namespace {

struct SumF {
  __device__ float operator()(float a, float b) const { return a + b; }
};
struct MaxF {
  __device__ float operator()(float a, float b) const { return a > b ? a : b; }
};

// The block's combined value, in every thread (blockDim.x a multiple of the warp size).
template <typename Combine>
__device__ float block_allreduce(float value, Combine combine, float* scratch) {
  value = warp_allreduce(value, combine);
  const int warp = int(threadIdx.x) / kWarpSize, lane = int(threadIdx.x) % kWarpSize;
  __syncthreads();  // scratch may still be read from a previous call
  if (lane == 0) scratch[warp] = value;
  __syncthreads();
  float total = scratch[0];
  for (int w = 1; w < int(blockDim.x) / kWarpSize; ++w) total = combine(total, scratch[w]);
  return total;
}

__global__ void __launch_bounds__(kBlockSize)
    cqt_magnitude_kernel(CqtDeviceBankView bank, const float* __restrict__ samples, int64_t length,
                         int64_t hop, int64_t frames, float* __restrict__ out) {
  __shared__ float scratch[kBlockSize / kWarpSize];
  const int64_t t = blockIdx.x, k = blockIdx.y, clip = blockIdx.z;
  const int64_t taps = bank.taps[k];
  const float* re = bank.re + bank.first[k];
  const float* im = bank.im + bank.first[k];
  const float* x = samples + clip * length;
  const int64_t start = t * hop - taps / 2;  // zeros outside the clip
  float sum_re = 0, sum_im = 0;
  for (int64_t j = threadIdx.x; j < taps; j += blockDim.x) {
    const int64_t at = start + j;
    const float sample = at >= 0 && at < length ? x[at] : 0.0f;
    sum_re += re[j] * sample;
    sum_im += im[j] * sample;
  }
  sum_re = block_allreduce(sum_re, SumF{}, scratch);
  sum_im = block_allreduce(sum_im, SumF{}, scratch);
  if (threadIdx.x == 0)
    out[(clip * bank.bins + k) * frames + t] = sqrtf(sum_re * sum_re + sum_im * sum_im);
}

__global__ void __launch_bounds__(kBlockSize)
    cqt_db_kernel(float* values, int64_t size, double top_db) {
  __shared__ float scratch[kBlockSize / kWarpSize];
  float* clip = values + int64_t(blockIdx.x) * size;
  float peak = 0;
  for (int64_t i = threadIdx.x; i < size; i += blockDim.x) peak = fmaxf(peak, clip[i]);
  peak = block_allreduce(peak, MaxF{}, scratch);
  constexpr double kAmin = 1e-5;
  // __dmul_rn: a product nvcc never fuses with the subtraction below. Fused (nvcc's default
  // --fmad=true), the peak's cell would be 20 * log10(peak) - reference = the product's
  // rounding error, not the CPU's exact 0 dB.
  const double reference = __dmul_rn(20, log10(fmax(double(peak), kAmin)));
  for (int64_t i = threadIdx.x; i < size; i += blockDim.x) {
    double db = __dmul_rn(20, log10(fmax(double(clip[i]), kAmin))) - reference;
    if (top_db > 0) db = fmax(db, -top_db);
    clip[i] = float(db);
  }
}

}  // namespace

void cqt_db(const CqtDeviceBankView& bank, const float* samples, int64_t clips, int64_t length,
            int64_t hop, double top_db, float* out, cudaStream_t stream) {
  SONATA_NVTX_RANGE("sonata::cuda::cqt_db");
  if (clips <= 0) return;
  const int64_t frames = 1 + length / hop;
  SONATA_CHECK(frames < (int64_t(1) << 31) && bank.bins <= 65535 && clips <= 65535,
               "cqt_db: ", frames, " frames, ", bank.bins, " bins and ", clips,
               " clips exceed one grid (at most 2^31 - 1 frames, 65535 bins and clips)");
  const dim3 grid(unsigned(frames), unsigned(bank.bins), unsigned(clips));
  launch(cqt_magnitude_kernel, grid, kBlockSize, 0, stream, bank, samples, length, hop, frames,
         out);
  CUDA_CHECK_LAUNCH();
  launch(cqt_db_kernel, unsigned(clips), kBlockSize, 0, stream, out, bank.bins * frames, top_db);
  CUDA_CHECK_LAUNCH();
}

}  // namespace sonata::kernels::cuda

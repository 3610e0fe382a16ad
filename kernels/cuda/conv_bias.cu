// The bias halves of conv2d on CUDA: cuDNN computes the convolution, these add and reduce
// the per-channel bias in every dtype (f16, bf16, f32, f64) without depending on which
// types cudnnAddTensor / cudnnConvolutionBackwardBias accept.
#include "base/nvtx.h"
#include "kernels/cuda/conv.h"
#include "kernels/cuda/launch.cuh"

namespace sonata::kernels::cuda {
namespace {

template <typename T>
__global__ void add_channel_bias_kernel(int64_t count, T* y, const T* bias, int64_t channels,
                                        int64_t plane) {
  for (int64_t i = thread_index(); i < count; i += thread_count()) {
    const int64_t c = (i / plane) % channels;
    y[i] = store<T>(load(y[i]) + load(bias[c]));
  }
}

// One block per channel: threads walk the channel's n * plane values together (coalesced
// along NCHW planes; channels-last rows arrive as plane = 1 and are read strided), then the
// block sums.
template <typename T>
__global__ void channel_bias_grad_kernel(const T* grad_y, T* grad_bias, int64_t n, int64_t channels,
                                         int64_t plane) {
  using Acc = float_compute_t<T>;
  const int64_t c = blockIdx.x;
  Acc total = 0;
  for (int64_t i = threadIdx.x; i < n * plane; i += blockDim.x) {
    const int64_t b = i / plane, p = i - b * plane;
    total += Acc(load(grad_y[(b * channels + c) * plane + p]));
  }
  total = warp_allreduce(total, [](Acc a, Acc b) { return a + b; });
  __shared__ Acc warp_totals[kBlockSize / kWarpSize];
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  if (lane == 0) warp_totals[warp] = total;
  __syncthreads();
  if (threadIdx.x == 0) {
    Acc sum = 0;
    for (int w = 0; w < int(blockDim.x / kWarpSize); ++w) sum += warp_totals[w];
    grad_bias[c] = store<T>(sum);
  }
}

}  // namespace

void add_channel_bias(DType dtype, void* y, const void* bias, int64_t n, int64_t channels,
                      int64_t plane, cudaStream_t stream) {
  SONATA_NVTX_RANGE("sonata::cuda::add_channel_bias");
  dispatch_float(dtype, "add_channel_bias", [&]<typename T>() {
    linear_kernel(add_channel_bias_kernel<T>, 0, stream, n * channels * plane, static_cast<T*>(y),
                  static_cast<const T*>(bias), channels, plane);
    CUDA_CHECK_LAUNCH();
  });
}

void channel_bias_grad(DType dtype, const void* grad_y, void* grad_bias, int64_t n,
                       int64_t channels, int64_t plane, cudaStream_t stream) {
  SONATA_NVTX_RANGE("sonata::cuda::channel_bias_grad");
  if (channels <= 0) return;
  dispatch_float(dtype, "channel_bias_grad", [&]<typename T>() {
    channel_bias_grad_kernel<T><<<unsigned(channels), kBlockSize, 0, stream>>>(
        static_cast<const T*>(grad_y), static_cast<T*>(grad_bias), n, channels, plane);
    CUDA_CHECK_LAUNCH();
  });
}

}  // namespace sonata::kernels::cuda

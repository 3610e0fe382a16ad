// The bias halves of conv2d on CUDA: cuDNN computes the convolution, these add and reduce
// the per-channel bias in every dtype (f16, bf16, f32, f64) without depending on which
// types cudnnAddTensor / cudnnConvolutionBackwardBias accept. The gradient runs on the line
// reductions of lines.cuh: coalesced in both layouts, spread over the SMs, deterministic.

#include "base/nvtx.h"
#include "kernels/cuda/conv.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/lines.cuh"
#include "kernels/cuda/stream_scratch.h"

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

// grad_bias is a sum over lines of the line reductions (lines.cuh): `in` read as In, summed
// in Acc, written as Out.
template <typename In, typename A, typename Out>
struct LineSum {
  using Acc = A;
  const In* in;
  Out* out;

  __device__ Acc identity() const { return Acc(0); }
  __device__ Acc lift(int64_t at, int64_t) const { return Acc(load(in[at])); }
  __device__ Acc combine(Acc a, Acc b) const { return a + b; }
  __device__ void write(int64_t line, Acc value) const { out[line] = store<Out>(value); }
};

}  // namespace

void add_channel_bias(DType dtype, void* y, const void* bias, int64_t n, int64_t channels,
                      int64_t plane, cudaStream_t stream) {
  SONATA_NVTX_RANGE("sonata::cuda::add_channel_bias");
  dispatch_f16_bf16_f32_f64(dtype, "add_channel_bias", [&]<typename T>() {
    linear_kernel(add_channel_bias_kernel<T>, 0, stream, n * channels * plane, static_cast<T*>(y),
                  static_cast<const T*>(bias), channels, plane);
    CUDA_CHECK_LAUNCH();
  });
}

void channel_bias_grad(DType dtype, const void* grad_y, void* grad_bias, int64_t n,
                       int64_t channels, int64_t plane, cudaStream_t stream) {
  SONATA_NVTX_RANGE("sonata::cuda::channel_bias_grad");
  if (channels <= 0) return;
  dispatch_f16_bf16_f32_f64(dtype, "channel_bias_grad", [&]<typename T>() {
    using A = float_compute_t<T>;
    const T* gy = static_cast<const T*>(grad_y);
    T* gb = static_cast<T*>(grad_bias);
    if (plane == 1) {
      // Channels-last [rows, channels]: column sums, read coalesced along the channels and
      // split along the rows when few channel tiles would leave the GPU idle.
      launch_line_reduction(1, n, channels, stream, LineSum<T, A, T>{gy, gb});
      CUDA_CHECK_LAUNCH();
      return;
    }
    // NCHW: each (sample, channel) plane is a contiguous row, summed first (a block or a warp
    // per plane, so n * channels lines fill the GPU), then the [n, channels] plane sums by
    // column, both in fixed orders.
    const StreamScratch scratch(sizeof(A) * size_t(n * channels), stream);
    A* plane_sums = scratch.as<A>();
    launch_line_reduction(n * channels, plane, 1, stream, LineSum<T, A, A>{gy, plane_sums});
    CUDA_CHECK_LAUNCH();
    launch_line_reduction(1, n, channels, stream, LineSum<A, A, T>{plane_sums, gb});
    CUDA_CHECK_LAUNCH();
  });
}

}  // namespace sonata::kernels::cuda

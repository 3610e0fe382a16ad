// The bias halves of conv2d on CUDA: cuDNN computes the convolution, these add and reduce
// the per-channel bias in every dtype (f16, bf16, f32, f64) without depending on which
// types cudnnAddTensor / cudnnConvolutionBackwardBias accept. The gradient runs on the line
// reductions of lines.cuh: coalesced in both layouts, spread over the SMs, deterministic.

#include <algorithm>

#include "base/nvtx.h"
#include "kernels/cuda/channel_vectors.cuh"
#include "kernels/cuda/conv.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/lines.cuh"
#include "kernels/cuda/stream_scratch.h"

namespace sonata::kernels::cuda {
namespace {

// NCHW: grid (pack blocks, planes), each thread adds its plane's bias to packs of V along the
// plane; the plane's channel is worked out once per plane, not per element.
template <typename T, int V>
__global__ void __launch_bounds__(kBlockSize)
    add_plane_bias_kernel(T* y, const T* bias, int64_t planes, int64_t channels,
                          int64_t packs_per_plane) {
  using C = compute_t<T>;
  for (int64_t plane = blockIdx.y; plane < planes; plane += gridDim.y) {
    const C b = load(bias[plane % channels]);
    T* row = y + plane * packs_per_plane * V;
    for (int64_t q = thread_index(); q < packs_per_plane; q += thread_count()) {
      Pack<T, V> pack = load_pack<V>(row, q);
#pragma unroll
      for (int k = 0; k < V; ++k) pack.v[k] = store<T>(load(pack.v[k]) + b);
      store_pack<V>(row, q, pack);
    }
  }
}

// Channels-last [rows, channels]: each thread one vector of V channels (its biases loaded
// once) over rows (kernels/cuda/channel_vectors.cuh).
template <typename T, int V>
__global__ void __launch_bounds__(kChannelVectorThreads)
    add_column_bias_kernel(T* y, const T* bias, int64_t rows, int64_t vectors) {
  using C = compute_t<T>;
  const int64_t step = int64_t(gridDim.x) * blockDim.y;
  for (int64_t tile = blockIdx.y; tile * blockDim.x < vectors; tile += gridDim.y) {
    const int64_t vector = tile * blockDim.x + threadIdx.x;
    if (vector >= vectors) return;  // no barriers here: idle lanes may leave
    const Pack<T, V> bias_pack = load_pack<V>(bias, vector);
    C b[V];
#pragma unroll
    for (int k = 0; k < V; ++k) b[k] = load(bias_pack.v[k]);
    for (int64_t row = int64_t(blockIdx.x) * blockDim.y + threadIdx.y; row < rows; row += step) {
      Pack<T, V> pack = load_pack<V>(y, row * vectors + vector);
#pragma unroll
      for (int k = 0; k < V; ++k) pack.v[k] = store<T>(load(pack.v[k]) + b[k]);
      store_pack<V>(y, row * vectors + vector, pack);
    }
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
  if (n <= 0 || channels <= 0 || plane <= 0) return;
  dispatch_f16_bf16_f32_f64(dtype, "add_channel_bias", [&]<typename T>() {
    T* out = static_cast<T*>(y);
    const T* b = static_cast<const T*>(bias);
    if (plane == 1) {
      with_channel_width<T>(channels, {y, bias}, [&]<int V>() {
        const ChannelVectorBlocks blocks = channel_vector_blocks(channels / V);
        launch(add_column_bias_kernel<T, V>, blocks.pass_grid(n), blocks.block(), 0, stream, out, b,
               n, channels / V);
        CUDA_CHECK_LAUNCH();
      });
      return;
    }
    // Packs along each plane when planes are whole packs (with_channel_width's rule, on the
    // plane's length); about kChannelVectorBlocks blocks in all.
    with_channel_width<T>(plane, {y}, [&]<int V>() {
      const int64_t planes = n * channels, packs = plane / V;
      const unsigned per_plane = unsigned(std::clamp<int64_t>(
          std::min<int64_t>(blocks_for(packs),
                            kChannelVectorBlocks / std::min<int64_t>(planes, 65535)),
          1, kMaxBlocks));
      launch(add_plane_bias_kernel<T, V>,
             dim3(per_plane, unsigned(std::min<int64_t>(planes, 65535))), dim3(kBlockSize), 0,
             stream, out, b, planes, channels, packs);
      CUDA_CHECK_LAUNCH();
    });
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

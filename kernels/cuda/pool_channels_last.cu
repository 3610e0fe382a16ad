// Channels-last pooling: grids of channel vectors x pixels (kernels/cuda/channel_vectors.cuh).
// Each thread works out its pixel's position once per pixel and then moves whole packs of V
// channels; the windows, the comparisons and the order of every sum are those of pool.cu's
// NCHW kernels, per channel.
#include "kernels/cuda/pool_channels_last.h"

#include <cmath>

#include "base/nvtx.h"
#include "kernels/cuda/channel_vectors.cuh"

namespace sonata::kernels::cuda {
namespace {

// The V indices of channel vector `vector` at pixel `pixel`, in 16-byte pairs when V is even
// (the indices array is 16-byte aligned and pixel * C + vector * V is then even).
template <int V>
__device__ __forceinline__ void load_indices(const int64_t* indices, int64_t first,
                                             int64_t (&out)[V]) {
  if constexpr (V % 2 == 0) {
#pragma unroll
    for (int k = 0; k < V; k += 2) {
      const Pack<int64_t, 2> pair = load_pack_readonly<2>(indices, (first + k) / 2);
      out[k] = pair.v[0];
      out[k + 1] = pair.v[1];
    }
  } else {
#pragma unroll
    for (int k = 0; k < V; ++k) out[k] = __ldg(indices + first + k);
  }
}

template <int V>
__device__ __forceinline__ void store_indices(int64_t* indices, int64_t first,
                                              const int64_t (&values)[V]) {
  if constexpr (V % 2 == 0) {
#pragma unroll
    for (int k = 0; k < V; k += 2)
      store_pack<2>(indices, (first + k) / 2, {values[k], values[k + 1]});
  } else {
#pragma unroll
    for (int k = 0; k < V; ++k) indices[first + k] = values[k];
  }
}

// The loops every kernel here shares: for each channel tile of the grid and each pixel of
// [0, pixels) this thread owns, visit(pixel, vector).
template <typename Visit>
__device__ __forceinline__ void for_pixel_vectors(int64_t pixels, int64_t vectors, Visit&& visit) {
  const int64_t step = int64_t(gridDim.x) * blockDim.y;
  for (int64_t tile = blockIdx.y; tile * blockDim.x < vectors; tile += gridDim.y) {
    const int64_t vector = tile * blockDim.x + threadIdx.x;
    if (vector >= vectors) return;  // no barriers here: idle lanes may leave
    for (int64_t p = int64_t(blockIdx.x) * blockDim.y + threadIdx.y; p < pixels; p += step)
      visit(p, vector);
  }
}

// One thread per (output pixel, channel vector). kTwoByTwo as pool.cu's max_pool2d_kernel; the
// comparison is PyTorch's: strictly greater keeps the first maximum, a NaN always takes over.
template <typename T, int V, bool kTwoByTwo>
__global__ void __launch_bounds__(kChannelVectorThreads)
    max_pool_kernel(Pool2dShape s, int64_t vectors, const T* x, T* y, int64_t* indices) {
  using C = compute_t<T>;
  const int64_t kh = kTwoByTwo ? 2 : s.kh, kw = kTwoByTwo ? 2 : s.kw;
  const int64_t stride_h = kTwoByTwo ? 2 : s.stride_h, stride_w = kTwoByTwo ? 2 : s.stride_w;
  const int64_t pad_h = kTwoByTwo ? 0 : s.pad_h, pad_w = kTwoByTwo ? 0 : s.pad_w;
  const int64_t dil_h = kTwoByTwo ? 1 : s.dil_h, dil_w = kTwoByTwo ? 1 : s.dil_w;
  for_pixel_vectors(s.planes * s.h_out * s.w_out, vectors, [&](int64_t p, int64_t vector) {
    const int64_t ow = p % s.w_out, oh = (p / s.w_out) % s.h_out, n = p / (s.w_out * s.h_out);
    const int64_t h0 = oh * stride_h - pad_h, w0 = ow * stride_w - pad_w;
    C best[V];
    int64_t best_index[V];
#pragma unroll
    for (int k = 0; k < V; ++k) {
      best[k] = -C(INFINITY);  // a window wholly in the padding: -inf and index -1
      best_index[k] = -1;
    }
#pragma unroll
    for (int64_t i = 0; i < kh; ++i) {
      const int64_t ih = h0 + i * dil_h;
      if (!kTwoByTwo && (ih < 0 || ih >= s.h)) continue;
#pragma unroll
      for (int64_t j = 0; j < kw; ++j) {
        const int64_t iw = w0 + j * dil_w;
        if (!kTwoByTwo && (iw < 0 || iw >= s.w)) continue;
        // x is never written here: the read-only path is allowed.
        const Pack<T, V> in =
            load_pack_readonly<V>(x, ((n * s.h + ih) * s.w + iw) * vectors + vector);
#pragma unroll
        for (int k = 0; k < V; ++k) {
          const C value = load(in.v[k]);
          if (best_index[k] < 0 || value > best[k] || isnan(value)) {
            best[k] = value;
            best_index[k] = ih * s.w + iw;
          }
        }
      }
    }
    Pack<T, V> out;
#pragma unroll
    for (int k = 0; k < V; ++k) out.v[k] = store<T>(best[k]);
    store_pack<V>(y, p * vectors + vector, out);
    store_indices<V>(indices, (p * vectors + vector) * V, best_index);
  });
}

// One thread per (input pixel, channel vector): sums grad_y over the windows whose maximum it
// is, visiting only the windows that can reach it (pool.cu's range and order).
template <typename T, int V>
__global__ void __launch_bounds__(kChannelVectorThreads)
    max_pool_backward_kernel(Pool2dShape s, int64_t vectors, const T* grad_y,
                             const int64_t* indices, T* grad_x) {
  using C = compute_t<T>;
  const int64_t extent_h = (s.kh - 1) * s.dil_h + 1, extent_w = (s.kw - 1) * s.dil_w + 1;
  for_pixel_vectors(s.planes * s.h * s.w, vectors, [&](int64_t e, int64_t vector) {
    const int64_t iw = e % s.w, ih = (e / s.w) % s.h, n = e / (s.w * s.h);
    const int64_t oh_begin =
        ih + s.pad_h < extent_h ? 0 : (ih + s.pad_h - extent_h) / s.stride_h + 1;
    const int64_t ow_begin =
        iw + s.pad_w < extent_w ? 0 : (iw + s.pad_w - extent_w) / s.stride_w + 1;
    const int64_t oh_last = (ih + s.pad_h) / s.stride_h + 1,
                  oh_end = oh_last < s.h_out ? oh_last : s.h_out;
    const int64_t ow_last = (iw + s.pad_w) / s.stride_w + 1,
                  ow_end = ow_last < s.w_out ? ow_last : s.w_out;
    const int64_t target = ih * s.w + iw;
    C total[V] = {};
    for (int64_t oh = oh_begin; oh < oh_end; ++oh)
      for (int64_t ow = ow_begin; ow < ow_end; ++ow) {
        const int64_t at = ((n * s.h_out + oh) * s.w_out + ow) * vectors + vector;
        // grad_y and indices are never written here: the read-only path is allowed.
        const Pack<T, V> gy = load_pack_readonly<V>(grad_y, at);
        int64_t where[V];
        load_indices<V>(indices, at * V, where);
#pragma unroll
        for (int k = 0; k < V; ++k)
          if (where[k] == target) total[k] += load(gy.v[k]);
      }
    Pack<T, V> out;
#pragma unroll
    for (int k = 0; k < V; ++k) out.v[k] = store<T>(total[k]);
    store_pack<V>(grad_x, e * vectors + vector, out);
  });
}

template <typename T, int V>
__global__ void __launch_bounds__(kChannelVectorThreads)
    adaptive_avg_pool_kernel(Pool2dShape s, int64_t vectors, const T* x, T* y) {
  using C = compute_t<T>;
  for_pixel_vectors(s.planes * s.h_out * s.w_out, vectors, [&](int64_t p, int64_t vector) {
    const int64_t ow = p % s.w_out, oh = (p / s.w_out) % s.h_out, n = p / (s.w_out * s.h_out);
    const int64_t h0 = adaptive_start(oh, s.h, s.h_out), h1 = adaptive_end(oh, s.h, s.h_out);
    const int64_t w0 = adaptive_start(ow, s.w, s.w_out), w1 = adaptive_end(ow, s.w, s.w_out);
    C total[V] = {};
    for (int64_t ih = h0; ih < h1; ++ih)
      for (int64_t iw = w0; iw < w1; ++iw) {
        // x is never written here: the read-only path is allowed.
        const Pack<T, V> in =
            load_pack_readonly<V>(x, ((n * s.h + ih) * s.w + iw) * vectors + vector);
#pragma unroll
        for (int k = 0; k < V; ++k) total[k] += load(in.v[k]);
      }
    const C window = C((h1 - h0) * (w1 - w0));
    Pack<T, V> out;
#pragma unroll
    for (int k = 0; k < V; ++k) out.v[k] = store<T>(total[k] / window);
    store_pack<V>(y, p * vectors + vector, out);
  });
}

// One thread per (input pixel, channel vector), as pool.cu's backward: output row i's window
// contains ih exactly when floor(ih * h_out / h) <= i < ceil((ih + 1) * h_out / h).
template <typename T, int V>
__global__ void __launch_bounds__(kChannelVectorThreads)
    adaptive_avg_pool_backward_kernel(Pool2dShape s, int64_t vectors, const T* grad_y, T* grad_x) {
  using C = compute_t<T>;
  for_pixel_vectors(s.planes * s.h * s.w, vectors, [&](int64_t e, int64_t vector) {
    const int64_t iw = e % s.w, ih = (e / s.w) % s.h, n = e / (s.w * s.h);
    const int64_t oh_begin = adaptive_start(ih, s.h_out, s.h);
    const int64_t oh_end = adaptive_end(ih, s.h_out, s.h);
    const int64_t ow_begin = adaptive_start(iw, s.w_out, s.w);
    const int64_t ow_end = adaptive_end(iw, s.w_out, s.w);
    C total[V] = {};
    for (int64_t oh = oh_begin; oh < oh_end; ++oh) {
      const int64_t rows = adaptive_end(oh, s.h, s.h_out) - adaptive_start(oh, s.h, s.h_out);
      for (int64_t ow = ow_begin; ow < ow_end; ++ow) {
        const int64_t cols = adaptive_end(ow, s.w, s.w_out) - adaptive_start(ow, s.w, s.w_out);
        // grad_y is never written here: the read-only path is allowed.
        const Pack<T, V> gy =
            load_pack_readonly<V>(grad_y, ((n * s.h_out + oh) * s.w_out + ow) * vectors + vector);
#pragma unroll
        for (int k = 0; k < V; ++k) total[k] += load(gy.v[k]) / C(rows * cols);
      }
    }
    Pack<T, V> out;
#pragma unroll
    for (int k = 0; k < V; ++k) out.v[k] = store<T>(total[k]);
    store_pack<V>(grad_x, e * vectors + vector, out);
  });
}

}  // namespace

void max_pool2d_channels_last(DType dtype, const Pool2dShape& s, int64_t channels, const void* x,
                              void* y, int64_t* indices, cudaStream_t stream) {
  SONATA_NVTX_RANGE("sonata::cuda::max_pool2d_channels_last");
  const int64_t pixels = s.planes * s.h_out * s.w_out;
  if (pixels <= 0 || channels <= 0) return;
  // Indices move in 16-byte pairs (the engine allocates them; a view is not accepted here).
  SONATA_CHECK(is_aligned(indices, 16),
               "max_pool2d_channels_last: indices must be 16-byte aligned");
  dispatch_f16_bf16_f32_f64(dtype, "max_pool2d_channels_last", [&]<typename T>() {
    with_channel_width<T>(channels, {x, y}, [&]<int V>() {
      const ChannelVectorBlocks blocks = channel_vector_blocks(channels / V);
      auto go = [&](auto kernel) {
        launch(kernel, blocks.pass_grid(pixels), blocks.block(), 0, stream, s, channels / V,
               static_cast<const T*>(x), static_cast<T*>(y), indices);
        CUDA_CHECK_LAUNCH();
      };
      if (s.is_2x2_stride_2())
        go(max_pool_kernel<T, V, true>);
      else
        go(max_pool_kernel<T, V, false>);
    });
  });
}

void max_pool2d_channels_last_backward(DType dtype, const Pool2dShape& s, int64_t channels,
                                       const void* grad_y, const int64_t* indices, void* grad_x,
                                       cudaStream_t stream) {
  SONATA_NVTX_RANGE("sonata::cuda::max_pool2d_channels_last_backward");
  const int64_t pixels = s.planes * s.h * s.w;
  if (pixels <= 0 || channels <= 0) return;
  SONATA_CHECK(is_aligned(indices, 16),
               "max_pool2d_channels_last_backward: indices must be 16-byte aligned");
  dispatch_f16_bf16_f32_f64(dtype, "max_pool2d_channels_last_backward", [&]<typename T>() {
    with_channel_width<T>(channels, {grad_y, grad_x}, [&]<int V>() {
      const ChannelVectorBlocks blocks = channel_vector_blocks(channels / V);
      launch(max_pool_backward_kernel<T, V>, blocks.pass_grid(pixels), blocks.block(), 0, stream, s,
             channels / V, static_cast<const T*>(grad_y), indices, static_cast<T*>(grad_x));
      CUDA_CHECK_LAUNCH();
    });
  });
}

void adaptive_avg_pool2d_channels_last(DType dtype, const Pool2dShape& s, int64_t channels,
                                       const void* x, void* y, cudaStream_t stream) {
  SONATA_NVTX_RANGE("sonata::cuda::adaptive_avg_pool2d_channels_last");
  const int64_t pixels = s.planes * s.h_out * s.w_out;
  if (pixels <= 0 || channels <= 0) return;
  dispatch_f16_bf16_f32_f64(dtype, "adaptive_avg_pool2d_channels_last", [&]<typename T>() {
    with_channel_width<T>(channels, {x, y}, [&]<int V>() {
      const ChannelVectorBlocks blocks = channel_vector_blocks(channels / V);
      launch(adaptive_avg_pool_kernel<T, V>, blocks.pass_grid(pixels), blocks.block(), 0, stream, s,
             channels / V, static_cast<const T*>(x), static_cast<T*>(y));
      CUDA_CHECK_LAUNCH();
    });
  });
}

void adaptive_avg_pool2d_channels_last_backward(DType dtype, const Pool2dShape& s, int64_t channels,
                                                const void* grad_y, void* grad_x,
                                                cudaStream_t stream) {
  SONATA_NVTX_RANGE("sonata::cuda::adaptive_avg_pool2d_channels_last_backward");
  const int64_t pixels = s.planes * s.h * s.w;
  if (pixels <= 0 || channels <= 0) return;
  dispatch_f16_bf16_f32_f64(dtype, "adaptive_avg_pool2d_channels_last_backward", [&]<typename T>() {
    with_channel_width<T>(channels, {grad_y, grad_x}, [&]<int V>() {
      const ChannelVectorBlocks blocks = channel_vector_blocks(channels / V);
      launch(adaptive_avg_pool_backward_kernel<T, V>, blocks.pass_grid(pixels), blocks.block(), 0,
             stream, s, channels / V, static_cast<const T*>(grad_y), static_cast<T*>(grad_x));
      CUDA_CHECK_LAUNCH();
    });
  });
}

}  // namespace sonata::kernels::cuda

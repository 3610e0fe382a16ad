#include "kernels/cuda/pool.h"

#include <cmath>

#include "base/nvtx.h"
#include "kernels/cuda/launch.cuh"

namespace sonata::kernels::cuda {
namespace {

// One thread per output. kTwoByTwo (Pool2dShape::is_2x2_stride_2) fixes the geometry at
// compile time: the loops unroll and the bounds checks vanish. The comparison is PyTorch's:
// strictly greater keeps the first maximum in scan order, a NaN always takes over.
template <typename T, bool kTwoByTwo>
__global__ void max_pool2d_kernel(int64_t count, Pool2dShape s, const T* x, T* y,
                                  int64_t* indices) {
  using C = compute_t<T>;
  const int64_t kh = kTwoByTwo ? 2 : s.kh, kw = kTwoByTwo ? 2 : s.kw;
  const int64_t stride_h = kTwoByTwo ? 2 : s.stride_h, stride_w = kTwoByTwo ? 2 : s.stride_w;
  const int64_t pad_h = kTwoByTwo ? 0 : s.pad_h, pad_w = kTwoByTwo ? 0 : s.pad_w;
  const int64_t dil_h = kTwoByTwo ? 1 : s.dil_h, dil_w = kTwoByTwo ? 1 : s.dil_w;
  for (int64_t o = thread_index(); o < count; o += thread_count()) {
    const int64_t ow = o % s.w_out, oh = (o / s.w_out) % s.h_out, plane = o / (s.w_out * s.h_out);
    const T* src = x + plane * s.h * s.w;
    const int64_t h0 = oh * stride_h - pad_h, w0 = ow * stride_w - pad_w;
    // A window can lie wholly in the padding (a large dilation): then it holds -inf and
    // index -1, as the CPU twin and PyTorch.
    int64_t best_index = -1;
    C best = -C(INFINITY);
#pragma unroll
    for (int64_t i = 0; i < kh; ++i) {
      const int64_t ih = h0 + i * dil_h;
      if (!kTwoByTwo && (ih < 0 || ih >= s.h)) continue;
#pragma unroll
      for (int64_t j = 0; j < kw; ++j) {
        const int64_t iw = w0 + j * dil_w;
        if (!kTwoByTwo && (iw < 0 || iw >= s.w)) continue;
        const C value = load(src[ih * s.w + iw]);
        if (best_index < 0 || value > best || isnan(value)) {
          best = value;
          best_index = ih * s.w + iw;
        }
      }
    }
    y[o] = store<T>(best);
    indices[o] = best_index;
  }
}

// One thread per input element: sums grad_y over the windows whose maximum it is. Only
// windows that can reach (ih, iw) are visited (PyTorch's range).
template <typename T>
__global__ void max_pool2d_backward_kernel(int64_t count, Pool2dShape s, const T* grad_y,
                                           const int64_t* indices, T* grad_x) {
  using C = compute_t<T>;
  const int64_t extent_h = (s.kh - 1) * s.dil_h + 1, extent_w = (s.kw - 1) * s.dil_w + 1;
  for (int64_t e = thread_index(); e < count; e += thread_count()) {
    const int64_t iw = e % s.w, ih = (e / s.w) % s.h, plane = e / (s.w * s.h);
    const int64_t oh_begin =
        ih + s.pad_h < extent_h ? 0 : (ih + s.pad_h - extent_h) / s.stride_h + 1;
    const int64_t ow_begin =
        iw + s.pad_w < extent_w ? 0 : (iw + s.pad_w - extent_w) / s.stride_w + 1;
    const int64_t oh_last = (ih + s.pad_h) / s.stride_h + 1,
                  oh_end = oh_last < s.h_out ? oh_last : s.h_out;
    const int64_t ow_last = (iw + s.pad_w) / s.stride_w + 1,
                  ow_end = ow_last < s.w_out ? ow_last : s.w_out;
    const int64_t target = ih * s.w + iw, out_base = plane * s.h_out * s.w_out;
    C total = C(0);
    for (int64_t oh = oh_begin; oh < oh_end; ++oh)
      for (int64_t ow = ow_begin; ow < ow_end; ++ow) {
        const int64_t o = out_base + oh * s.w_out + ow;
        if (indices[o] == target) total += load(grad_y[o]);
      }
    grad_x[e] = store<T>(total);
  }
}

template <typename T>
__global__ void adaptive_avg_pool2d_kernel(int64_t count, Pool2dShape s, const T* x, T* y) {
  using C = compute_t<T>;
  for (int64_t o = thread_index(); o < count; o += thread_count()) {
    const int64_t ow = o % s.w_out, oh = (o / s.w_out) % s.h_out, plane = o / (s.w_out * s.h_out);
    const T* src = x + plane * s.h * s.w;
    const int64_t h0 = adaptive_start(oh, s.h, s.h_out), h1 = adaptive_end(oh, s.h, s.h_out);
    const int64_t w0 = adaptive_start(ow, s.w, s.w_out), w1 = adaptive_end(ow, s.w, s.w_out);
    C total = C(0);
    for (int64_t ih = h0; ih < h1; ++ih)
      for (int64_t iw = w0; iw < w1; ++iw) total += load(src[ih * s.w + iw]);
    y[o] = store<T>(total / C((h1 - h0) * (w1 - w0)));
  }
}

// One thread per input element. Output row i's window contains ih exactly when
// floor(ih * h_out / h) <= i < ceil((ih + 1) * h_out / h), likewise for columns.
template <typename T>
__global__ void adaptive_avg_pool2d_backward_kernel(int64_t count, Pool2dShape s, const T* grad_y,
                                                    T* grad_x) {
  using C = compute_t<T>;
  for (int64_t e = thread_index(); e < count; e += thread_count()) {
    const int64_t iw = e % s.w, ih = (e / s.w) % s.h, plane = e / (s.w * s.h);
    const T* gy = grad_y + plane * s.h_out * s.w_out;
    const int64_t oh_begin = adaptive_start(ih, s.h_out, s.h);
    const int64_t oh_end = adaptive_end(ih, s.h_out, s.h);
    const int64_t ow_begin = adaptive_start(iw, s.w_out, s.w);
    const int64_t ow_end = adaptive_end(iw, s.w_out, s.w);
    C total = C(0);
    for (int64_t oh = oh_begin; oh < oh_end; ++oh) {
      const int64_t rows = adaptive_end(oh, s.h, s.h_out) - adaptive_start(oh, s.h, s.h_out);
      for (int64_t ow = ow_begin; ow < ow_end; ++ow) {
        const int64_t cols = adaptive_end(ow, s.w, s.w_out) - adaptive_start(ow, s.w, s.w_out);
        total += load(gy[oh * s.w_out + ow]) / C(rows * cols);
      }
    }
    grad_x[e] = store<T>(total);
  }
}

}  // namespace

void max_pool2d(DType dtype, const Pool2dShape& s, const void* x, void* y, int64_t* indices,
                cudaStream_t stream) {
  SONATA_NVTX_RANGE("sonata::cuda::max_pool2d");
  dispatch_f16_bf16_f32_f64(dtype, "max_pool2d", [&]<typename T>() {
    const int64_t count = s.planes * s.h_out * s.w_out;
    if (s.is_2x2_stride_2())
      linear_kernel(max_pool2d_kernel<T, true>, 0, stream, count, s, static_cast<const T*>(x),
                    static_cast<T*>(y), indices);
    else
      linear_kernel(max_pool2d_kernel<T, false>, 0, stream, count, s, static_cast<const T*>(x),
                    static_cast<T*>(y), indices);
    CUDA_CHECK_LAUNCH();
  });
}

void max_pool2d_backward(DType dtype, const Pool2dShape& s, const void* grad_y,
                         const int64_t* indices, void* grad_x, cudaStream_t stream) {
  SONATA_NVTX_RANGE("sonata::cuda::max_pool2d_backward");
  dispatch_f16_bf16_f32_f64(dtype, "max_pool2d_backward", [&]<typename T>() {
    linear_kernel(max_pool2d_backward_kernel<T>, 0, stream, s.planes * s.h * s.w, s,
                  static_cast<const T*>(grad_y), indices, static_cast<T*>(grad_x));
    CUDA_CHECK_LAUNCH();
  });
}

void adaptive_avg_pool2d(DType dtype, const Pool2dShape& s, const void* x, void* y,
                         cudaStream_t stream) {
  SONATA_NVTX_RANGE("sonata::cuda::adaptive_avg_pool2d");
  dispatch_f16_bf16_f32_f64(dtype, "adaptive_avg_pool2d", [&]<typename T>() {
    linear_kernel(adaptive_avg_pool2d_kernel<T>, 0, stream, s.planes * s.h_out * s.w_out, s,
                  static_cast<const T*>(x), static_cast<T*>(y));
    CUDA_CHECK_LAUNCH();
  });
}

void adaptive_avg_pool2d_backward(DType dtype, const Pool2dShape& s, const void* grad_y,
                                  void* grad_x, cudaStream_t stream) {
  SONATA_NVTX_RANGE("sonata::cuda::adaptive_avg_pool2d_backward");
  dispatch_f16_bf16_f32_f64(dtype, "adaptive_avg_pool2d_backward", [&]<typename T>() {
    linear_kernel(adaptive_avg_pool2d_backward_kernel<T>, 0, stream, s.planes * s.h * s.w, s,
                  static_cast<const T*>(grad_y), static_cast<T*>(grad_x));
    CUDA_CHECK_LAUNCH();
  });
}

}  // namespace sonata::kernels::cuda

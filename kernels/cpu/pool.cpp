#include "kernels/cpu/pool.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "base/nvtx.h"
#include "kernels/cpu/capability_region.h"
#include "kernels/cpu/dispatch.h"

SONATA_CPU_BEGIN
namespace {

constexpr int64_t kParallelMin = int64_t(1) << 14;

// One plane, any window. Padded positions are skipped (they act as -inf), so every window
// reads at least one real element whenever padding <= kernel / 2 (the engine checks).
template <typename T>
void max_pool_plane(const Pool2dShape& s, const T* x, T* y, int64_t* indices) {
  for (int64_t oh = 0; oh < s.h_out; ++oh) {
    for (int64_t ow = 0; ow < s.w_out; ++ow) {
      const int64_t h0 = oh * s.stride_h - s.pad_h, w0 = ow * s.stride_w - s.pad_w;
      int64_t best_index = -1;
      T best = -std::numeric_limits<T>::infinity();
      for (int64_t i = 0; i < s.kh; ++i) {
        const int64_t ih = h0 + i * s.dil_h;
        if (ih < 0 || ih >= s.h) continue;
        for (int64_t j = 0; j < s.kw; ++j) {
          const int64_t iw = w0 + j * s.dil_w;
          if (iw < 0 || iw >= s.w) continue;
          const T value = x[ih * s.w + iw];
          // PyTorch's rule: strictly greater keeps the first maximum; NaN always takes over.
          if (best_index < 0 || value > best || std::isnan(value)) {
            best = value;
            best_index = ih * s.w + iw;
          }
        }
      }
      y[oh * s.w_out + ow] = best;
      indices[oh * s.w_out + ow] = best_index;
    }
  }
}

// 2x2 windows at stride 2 (VGG): no bounds checks, the four reads in scan order.
template <typename T>
void max_pool_plane_2x2(const Pool2dShape& s, const T* x, T* y, int64_t* indices) {
  for (int64_t oh = 0; oh < s.h_out; ++oh) {
    const T* top = x + 2 * oh * s.w;
    const T* bottom = top + s.w;
    for (int64_t ow = 0; ow < s.w_out; ++ow) {
      const int64_t iw = 2 * ow;
      const T candidates[4] = {top[iw], top[iw + 1], bottom[iw], bottom[iw + 1]};
      const int64_t offsets[4] = {0, 1, s.w, s.w + 1};
      int k_best = 0;
      for (int k = 1; k < 4; ++k)
        if (candidates[k] > candidates[k_best] || std::isnan(candidates[k])) k_best = k;
      y[oh * s.w_out + ow] = candidates[k_best];
      indices[oh * s.w_out + ow] = 2 * oh * s.w + iw + offsets[k_best];
    }
  }
}

}  // namespace

void max_pool2d(DType dtype, const Pool2dShape& s, const void* x, void* y, int64_t* indices) {
  SONATA_NVTX_RANGE("sonata::cpu::max_pool2d");
  dispatch_f32_f64(dtype, "max_pool2d", [&]<typename T>() {
    const int64_t in_plane = s.h * s.w, out_plane = s.h_out * s.w_out;
    const bool fast = s.is_2x2_stride_2();
#pragma omp parallel for schedule(static) if (s.planes * in_plane >= kParallelMin)
    for (int64_t p = 0; p < s.planes; ++p) {
      const T* src = static_cast<const T*>(x) + p * in_plane;
      T* dst = static_cast<T*>(y) + p * out_plane;
      if (fast)
        max_pool_plane_2x2(s, src, dst, indices + p * out_plane);
      else
        max_pool_plane(s, src, dst, indices + p * out_plane);
    }
  });
}

void max_pool2d_backward(DType dtype, const Pool2dShape& s, const void* grad_y,
                         const int64_t* indices, void* grad_x) {
  SONATA_NVTX_RANGE("sonata::cpu::max_pool2d_backward");
  dispatch_f32_f64(dtype, "max_pool2d_backward", [&]<typename T>() {
    const int64_t in_plane = s.h * s.w, out_plane = s.h_out * s.w_out;
    // Planes are independent, so overlapping windows within one plane add up serially.
#pragma omp parallel for schedule(static) if (s.planes * in_plane >= kParallelMin)
    for (int64_t p = 0; p < s.planes; ++p) {
      T* gx = static_cast<T*>(grad_x) + p * in_plane;
      const T* gy = static_cast<const T*>(grad_y) + p * out_plane;
      const int64_t* index = indices + p * out_plane;
      std::fill(gx, gx + in_plane, T(0));
      // -1 marks a window that saw no element (only possible with a large dilation).
      for (int64_t o = 0; o < out_plane; ++o)
        if (index[o] >= 0) gx[index[o]] += gy[o];
    }
  });
}

void adaptive_avg_pool2d(DType dtype, const Pool2dShape& s, const void* x, void* y) {
  SONATA_NVTX_RANGE("sonata::cpu::adaptive_avg_pool2d");
  dispatch_f32_f64(dtype, "adaptive_avg_pool2d", [&]<typename T>() {
    const int64_t in_plane = s.h * s.w, out_plane = s.h_out * s.w_out;
#pragma omp parallel for schedule(static) if (s.planes * in_plane >= kParallelMin)
    for (int64_t p = 0; p < s.planes; ++p) {
      const T* src = static_cast<const T*>(x) + p * in_plane;
      T* dst = static_cast<T*>(y) + p * out_plane;
      for (int64_t oh = 0; oh < s.h_out; ++oh) {
        const int64_t h0 = adaptive_start(oh, s.h, s.h_out), h1 = adaptive_end(oh, s.h, s.h_out);
        for (int64_t ow = 0; ow < s.w_out; ++ow) {
          const int64_t w0 = adaptive_start(ow, s.w, s.w_out);
          const int64_t w1 = adaptive_end(ow, s.w, s.w_out);
          compute_t<T> total = 0;
          for (int64_t ih = h0; ih < h1; ++ih)
            for (int64_t iw = w0; iw < w1; ++iw) total += src[ih * s.w + iw];
          dst[oh * s.w_out + ow] = T(total / compute_t<T>((h1 - h0) * (w1 - w0)));
        }
      }
    }
  });
}

void adaptive_avg_pool2d_backward(DType dtype, const Pool2dShape& s, const void* grad_y,
                                  void* grad_x) {
  SONATA_NVTX_RANGE("sonata::cpu::adaptive_avg_pool2d_backward");
  dispatch_f32_f64(dtype, "adaptive_avg_pool2d_backward", [&]<typename T>() {
    const int64_t in_plane = s.h * s.w, out_plane = s.h_out * s.w_out;
#pragma omp parallel for schedule(static) if (s.planes * in_plane >= kParallelMin)
    for (int64_t p = 0; p < s.planes; ++p) {
      T* gx = static_cast<T*>(grad_x) + p * in_plane;
      const T* gy = static_cast<const T*>(grad_y) + p * out_plane;
      std::fill(gx, gx + in_plane, T(0));
      for (int64_t oh = 0; oh < s.h_out; ++oh) {
        const int64_t h0 = adaptive_start(oh, s.h, s.h_out), h1 = adaptive_end(oh, s.h, s.h_out);
        for (int64_t ow = 0; ow < s.w_out; ++ow) {
          const int64_t w0 = adaptive_start(ow, s.w, s.w_out);
          const int64_t w1 = adaptive_end(ow, s.w, s.w_out);
          const T share = T(gy[oh * s.w_out + ow] / T((h1 - h0) * (w1 - w0)));
          for (int64_t ih = h0; ih < h1; ++ih)
            for (int64_t iw = w0; iw < w1; ++iw) gx[ih * s.w + iw] += share;
        }
      }
    }
  });
}

SONATA_CPU_END

#if SONATA_CPU_ENTRY_POINTS
// The public functions: each runs the active capability's copy.
namespace sonata::kernels::cpu {

SONATA_CPU_DECLARE(max_pool2d)
SONATA_CPU_DECLARE(max_pool2d_backward)
SONATA_CPU_DECLARE(adaptive_avg_pool2d)
SONATA_CPU_DECLARE(adaptive_avg_pool2d_backward)

void max_pool2d(DType dtype, const Pool2dShape& shape, const void* x, void* y, int64_t* indices) {
  SONATA_CPU_CALL(max_pool2d)(dtype, shape, x, y, indices);
}

void max_pool2d_backward(DType dtype, const Pool2dShape& shape, const void* grad_y,
                         const int64_t* indices, void* grad_x) {
  SONATA_CPU_CALL(max_pool2d_backward)(dtype, shape, grad_y, indices, grad_x);
}

void adaptive_avg_pool2d(DType dtype, const Pool2dShape& shape, const void* x, void* y) {
  SONATA_CPU_CALL(adaptive_avg_pool2d)(dtype, shape, x, y);
}

void adaptive_avg_pool2d_backward(DType dtype, const Pool2dShape& shape, const void* grad_y,
                                  void* grad_x) {
  SONATA_CPU_CALL(adaptive_avg_pool2d_backward)(dtype, shape, grad_y, grad_x);
}

}  // namespace sonata::kernels::cpu
#endif

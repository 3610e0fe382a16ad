#pragma once
// Geometry of 2-D sliding windows over contiguous NCHW tensors, shared by the CPU and CUDA
// convolution and pooling kernels. The engine computes the output sizes once (PyTorch's
// formulas) and passes them in, so that no two floors disagree about them.
#include <cstdint>

#include "base/hd.h"

namespace sonata::kernels {

// Cross-correlation (PyTorch's conv2d, groups = 1): x[n, c_in, h, w] with
// weight[c_out, c_in, kh, kw] gives y[n, c_out, h_out, w_out]. With channels_last the same
// tensors are stored NHWC: x[n, h, w, c_in], weight[c_out, kh, kw, c_in], y[n, h_out, w_out,
// c_out] (CUDA only; the CPU kernels take NCHW and the engine converts).
struct Conv2dShape {
  int64_t n = 0, c_in = 0, h = 0, w = 0;
  int64_t c_out = 0, kh = 0, kw = 0;
  int64_t stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0, dil_h = 1, dil_w = 1;
  int64_t h_out = 0, w_out = 0;
  bool channels_last = false;

  int64_t patch() const { return c_in * kh * kw; }  // the GEMM's reduction length
};

// Which product a convolution workspace is sized for.
enum class ConvPass : uint8_t { forward, backward_input, backward_weight };

// A pooling window over `planes` = n * c independent h x w planes.
struct Pool2dShape {
  int64_t planes = 0, h = 0, w = 0;
  int64_t kh = 1, kw = 1;
  int64_t stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0, dil_h = 1, dil_w = 1;
  int64_t h_out = 0, w_out = 0;

  // The VGG case, worth a kernel of its own: 2x2 windows, stride 2, no padding or dilation,
  // every window inside the plane (ceil_mode's last window may hang over the edge).
  SONATA_HD bool is_2x2_stride_2() const {
    return kh == 2 && kw == 2 && stride_h == 2 && stride_w == 2 && pad_h == 0 && pad_w == 0 &&
           dil_h == 1 && dil_w == 1 && 2 * h_out <= h && 2 * w_out <= w;
  }
};

// Adaptive pooling's window along one axis (PyTorch): output i of `out` covers input
// [floor(i * in / out), ceil((i + 1) * in / out)).
SONATA_HD int64_t adaptive_start(int64_t i, int64_t in, int64_t out) {
  return (i * in) / out;
}
SONATA_HD int64_t adaptive_end(int64_t i, int64_t in, int64_t out) {
  return ((i + 1) * in + out - 1) / out;
}

}  // namespace sonata::kernels

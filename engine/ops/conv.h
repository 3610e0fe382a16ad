#pragma once
// 2-D convolution (NCHW, groups = 1) with PyTorch's semantics: cross-correlation,
// h_out = floor((h + 2 * padding - dilation * (kh - 1) - 1) / stride) + 1, likewise w_out.
// CPU: im2col + OpenBLAS (f32, f64); CUDA: cuDNN (f16, bf16, f32, f64).
#include <array>
#include <cstdint>

#include "engine/tensor.h"

namespace sonata {

struct Conv2dParams {
  std::array<int64_t, 2> stride{1, 1}, padding{0, 0}, dilation{1, 1};
};

// x[N, C_in, H, W] * weight[C_out, C_in, kh, kw] (+ bias[C_out] when defined) gives
// [N, C_out, h_out, w_out]; differentiable in x, weight and bias.
Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(),
              const Conv2dParams& params = {});

}  // namespace sonata

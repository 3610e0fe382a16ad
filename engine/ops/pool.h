#pragma once
// 2-D pooling over the last two dims of [N, C, H, W] (or [C, H, W]) tensors, as PyTorch's
// max_pool2d and adaptive_avg_pool2d.
#include <array>
#include <cstdint>
#include <utility>

#include "engine/tensor.h"

namespace sonata {

// Window maxima and their indices (i64, flat h*w index within each plane, as PyTorch's
// return_indices). Padding acts as -inf and must be at most half the kernel; ceil_mode
// rounds the output size up, but no window may start in the right/bottom padding. The
// gradient goes to each window's first maximum; a NaN is the maximum of its window.
std::pair<Tensor, Tensor> max_pool2d(const Tensor& x, std::array<int64_t, 2> kernel_size,
                                     std::array<int64_t, 2> stride,
                                     std::array<int64_t, 2> padding = {0, 0},
                                     std::array<int64_t, 2> dilation = {1, 1},
                                     bool ceil_mode = false);

// Means over windows [floor(i*H/oh), ceil((i+1)*H/oh)) x (likewise for W); the output may
// be larger than the input (windows then overlap).
Tensor adaptive_avg_pool2d(const Tensor& x, std::array<int64_t, 2> output_size);

}  // namespace sonata

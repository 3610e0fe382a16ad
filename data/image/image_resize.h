#pragma once
// Bilinear resize of a [C, H, W] f32 CPU image, as torchvision's Resize([h, w]) does on a
// float tensor with antialias off (torchvision 0.14's default for tensors;
// torch.nn.functional.interpolate(mode="bilinear", align_corners=False)): output pixel x
// samples the input at (x + 0.5) * in / out - 0.5, clamped to [0, in - 1], linearly between
// its two neighbours, rows then columns. Without antialiasing a strong downscale skips input
// pixels (PIL's resize and torchvision's antialias=True average them instead).
#include <cstdint>

#include "engine/tensor.h"

namespace sonata {

Tensor resize_bilinear(const Tensor& image, int64_t height, int64_t width);

}  // namespace sonata

#pragma once
// torchvision's Normalize(mean, std) on a [C, H, W] f32 CPU image, in place:
// x[c] = (x[c] - mean[c]) / std[c]. mean and std hold one value for every channel or one per
// channel. CCMusic's setting is mean = std = 0.5, which maps [0, 1] onto [-1, 1].
#include <vector>

#include "engine/tensor.h"

namespace sonata {

struct ImageNormalize {
  std::vector<double> mean{0.5}, std{0.5};
};

// Throws naming a list whose length is neither 1 nor `channels`, or a std that is not
// positive (`what` prefixes the message: the option names the user gave).
void check_image_normalize(const ImageNormalize& normalize, int64_t channels, const char* what);

void normalize_image(Tensor& image, const ImageNormalize& normalize);

}  // namespace sonata

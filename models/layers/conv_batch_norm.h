#pragma once
// A convolution followed by BatchNorm and ReLU (VGG's blocks), with the convolution's bias left
// out where batch statistics remove it: training-mode BatchNorm subtracts the batch mean, which
// holds the bias exactly, so adding it (a pass over the output) and reducing its gradient (a
// pass over the output's gradient) buy nothing. The bias parameter stays, under its name; its
// gradient is an exact zero, and the running mean is what it would have been with the bias
// added (BatchNorm::forward_relu_without_bias). In eval mode the bias is added as usual.
#include "engine/tensor.h"
#include "models/layers/batch_norm.h"
#include "models/layers/conv2d.h"

namespace sonata {

Tensor conv_batch_norm_relu(Conv2d& conv, BatchNorm& batch_norm, const Tensor& x);

}  // namespace sonata

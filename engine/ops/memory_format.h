#pragma once
// Channels-last storage for 4-D [N, C, H, W] tensors, as PyTorch's torch.channels_last: the
// shape stays NCHW and only the strides change, to (H*W*C, 1, W*C, C), so that each pixel's
// channels sit together. cuDNN's tensor-core convolutions run on that layout without the
// transposes they otherwise insert; conv2d, batch_norm and the pools keep it from input to
// output, and every other op accepts it like any strided tensor.
#include "engine/tensor.h"

namespace sonata {

// True for 4-D tensors whose strides are channels-last. A tensor with one channel, or with
// one pixel, is both this and contiguous (the layouts coincide).
bool is_channels_last(const Tensor& x);

// Whether an op should keep x in channels-last: it is channels-last and not also plain
// contiguous (the ambiguous cases take the NCHW path, which is the same memory).
bool prefers_channels_last(const Tensor& x);

// x in channels-last storage (x itself when already), differentiable. 4-D only.
Tensor to_channels_last(const Tensor& x);

// A channels-last tensor of this NCHW shape, uninitialised.
Tensor empty_channels_last(const Shape& nchw, const TensorOptions& options);

}  // namespace sonata

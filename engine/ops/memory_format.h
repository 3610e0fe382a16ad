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
// contiguous, or it has one channel whose stride is 1 (PyTorch's mark for a one-channel
// channels-last tensor: the memory is NCHW's, but the layout must flow on to the outputs,
// or a one-channel VGG would run NCHW from its first convolution on).
bool prefers_channels_last(const Tensor& x);

// x in channels-last storage (x itself when already), differentiable. 4-D only. One channel
// gives a view of the same memory with the channel stride 1.
Tensor to_channels_last(const Tensor& x);

// x in NCHW storage with NCHW's own strides (x.contiguous(), and a one-channel
// channels-last tensor becomes a plain view), for the NCHW-only kernels.
Tensor to_contiguous_nchw(const Tensor& x);

// A channels-last tensor of this NCHW shape, uninitialised.
Tensor empty_channels_last(const Shape& nchw, const TensorOptions& options);

}  // namespace sonata

#pragma once
// The pools' channels-last path on CUDA (kernels/cuda/pool_channels_last.h): channels-last
// input pooled in place of its layout, output and indices channels-last, no transposes.
// engine/ops/pool.cpp calls these for CUDA tensors that prefer channels-last, after its checks
// (defined only where CUDA is built); the CPU reference keeps pooling such input through NCHW
// copies, an independent path for the CUDA parity tests.
#include <utility>

#include "engine/tensor.h"
#include "kernels/common/conv_shape.h"

namespace sonata {

// `s` as pool.cpp works it out for NCHW (planes = N * C); x is 4-D, on CUDA, channels-last.
std::pair<Tensor, Tensor> max_pool2d_channels_last(const Tensor& x, kernels::Pool2dShape s);
Tensor adaptive_avg_pool2d_channels_last(const Tensor& x, kernels::Pool2dShape s);

}  // namespace sonata

#pragma once
// Direct 2-D convolution on the CPU (NCHW, groups = 1, f32 and f64) for layers with few
// channels on one side, such as DeepSpeech2's 8-channel front end. There im2col + GEMM is a
// poor fit: the GEMM has only c_out rows, and the columns (1 848 rows per output pixel for
// an 8 -> 8, 11x21 filter) are written and read back through memory that no cache holds.
//
// Every pass here is one register-blocked product: 8 channels in the vector lanes, up to 8
// pixels along a row of the output (or of the filter, for the weight gradient) in
// registers, and the sum running over a table of (weight vector, input offset) terms:
//   forward          lanes: output channels; pixels: output columns; terms: (c_in, i, j)
//   backward_weight  lanes: output channels; pixels: filter columns; terms: output pixels
//   backward_input   lanes: input channels;  pixels: input columns of one stride phase;
//                    terms: the (c_out, i, j) taps that reach that phase
// The inputs are first copied into zero-padded planes so that no inner loop checks bounds.
// kernels/cpu/conv.cpp chooses between this and im2col + GEMM (CpuConvAlgorithm).
#include <cstddef>

#include "base/dtype.h"
#include "kernels/common/conv_shape.h"

namespace sonata::kernels::cpu::direct_conv {

// The lane dimension of `pass` (c_out, or c_in for the input gradient) is at most this
// many channels: a wider layer fills a GEMM's rows well enough.
constexpr int64_t kMaxLaneChannels = 16;

bool suits(const Conv2dShape& shape, ConvPass pass);

size_t workspace_bytes(DType dtype, const Conv2dShape& shape, ConvPass pass);

void forward(DType dtype, const Conv2dShape& shape, const void* x, const void* weight,
             const void* bias, void* y, void* workspace, size_t workspace_bytes);
void backward_input(DType dtype, const Conv2dShape& shape, const void* grad_y, const void* weight,
                    void* grad_x, void* workspace, size_t workspace_bytes);
// grad_weight (and grad_bias when not null), overwritten.
void backward_weight(DType dtype, const Conv2dShape& shape, const void* grad_y, const void* x,
                     void* grad_weight, void* grad_bias, void* workspace, size_t workspace_bytes);

}  // namespace sonata::kernels::cpu::direct_conv

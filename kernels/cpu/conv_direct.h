#pragma once
// Direct 2-D convolution on the CPU (NCHW, groups = 1, f32 and f64). im2col + GEMM writes
// and reads back columns that no cache holds (1 848 rows per output pixel for an 8 -> 8,
// 11x21 filter, 7 392 for DeepSpeech2's 32 -> 32 one) and gives each gathered element only
// c_out multiply-adds; a direct pass reads the (padded) input in place.
//
// Every pass here is one register-blocked product, a batch-reduce GEMM microkernel in the
// manner of LIBXSMM's and oneDNN's direct convolutions: 8, 16 or 32 channels in the vector
// lanes (as wide as the capability's registers allow, 8 for layers of at most 8 channels),
// up to 8 pixels along a row of the output (or of the filter, for the weight gradient) in
// registers, and the sum running over a table of (weight vector, input offset) terms:
//   forward          lanes: output channels; pixels: output columns; terms: (c_in, i, j)
//   backward_weight  lanes: output channels; pixels: filter columns (or input channels,
//                    for filters narrower than the pixels); terms: output pixels, in
//                    tiles that stay in L2
//   backward_input   lanes: input channels;  pixels: input columns of one stride phase;
//                    terms: the (c_out, i, j) taps that reach that phase
// The inputs are first copied into zero-padded planes so that no inner loop checks bounds.
// kernels/cpu/conv.cpp chooses between this and im2col + GEMM (CpuConvAlgorithm).
#include <cstddef>

#include "base/dtype.h"
#include "kernels/common/conv_shape.h"

namespace sonata::kernels::cpu::direct_conv {

// Where the direct passes beat im2col + GEMM (measured with bench_models --layers on the
// DeepSpeech2 and VGG19_BN layers, bench/RESULTS.md): the forward pass always; the input
// gradient from this many input channels (its lanes); the weight gradient for filters at
// least this many columns wide or twice as many input channels (its register rows).
constexpr int64_t kMinInputGradientChannels = 8;
constexpr int64_t kMinWeightGradientRows = 4;

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

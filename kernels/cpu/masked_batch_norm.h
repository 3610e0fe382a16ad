#pragma once
// Batch normalisation over padded sequences, CPU reference in f32 and f64: x is a contiguous
// [batch, channels, time, inner] block (DS2's convolution output [N, C, T, F]: inner = F) in
// which sample n's frames t < lengths[n] are its own and the rest is padding. The statistics
// are those of the valid values alone (`count` = inner * sum(lengths) per channel), the output
// and x's gradient are 0 on padding, and the gradient is exactly that of the masked
// statistics, so padding a batch further changes nothing but the work (deepspeech.pytorch's
// MaskConv zeroes the padding for the same reason, but its BatchNorm still counts it).
// The CUDA twin in kernels/cuda/masked_batch_norm.h has the same functions plus a stream.
//
// `lengths`: i64 [batch], each in [0, time], in the memory x is in. Per-channel arrays
// (weight, bias, running stats, mean, invstd, gradient sums) are in the statistics type as in
// kernels/cpu/batch_norm.h: f64 beside f64 data, else f32. Sums are taken in double here.
#include <cstdint>

#include "base/dtype.h"
#include "kernels/common/sequence_layout.h"

namespace sonata::kernels::cpu {

// Per-channel mean and invstd = 1 / sqrt(biased variance + eps) over the valid values; the
// running stats, when not null, take the unbiased variance (count >= 2; the engine checks).
void masked_batch_norm_statistics(DType dtype, const void* x, const int64_t* lengths,
                                  SequenceLayout layout, int64_t count, double eps, double momentum,
                                  void* running_mean, void* running_var, void* mean, void* invstd);

// y = (x - mean) * invstd * weight + bias on valid frames, 0 on padding; weight and bias may
// be null (1 and 0).
void masked_batch_norm_apply(DType dtype, const void* x, const int64_t* lengths, const void* mean,
                             const void* invstd, const void* weight, const void* bias,
                             SequenceLayout layout, void* y);

// Per-channel sum_dy = sum(dy) and sum_dy_xhat = sum(dy * (x - mean) * invstd) over the valid
// values: the gradients of bias and weight.
void masked_batch_norm_backward_reduce(DType dtype, const void* grad_y, const void* x,
                                       const int64_t* lengths, const void* mean, const void* invstd,
                                       SequenceLayout layout, void* sum_dy, void* sum_dy_xhat);

// grad_x on valid frames for batch statistics (sum_dy given):
//   invstd * weight * (dy - sum_dy / count - x_hat * sum_dy_xhat / count),
// or for fixed (running) statistics when sum_dy is null: invstd * weight * dy; 0 on padding.
void masked_batch_norm_backward_input(DType dtype, const void* grad_y, const void* x,
                                      const int64_t* lengths, const void* mean, const void* invstd,
                                      const void* weight, const void* sum_dy,
                                      const void* sum_dy_xhat, int64_t count, SequenceLayout layout,
                                      void* grad_x);

}  // namespace sonata::kernels::cpu

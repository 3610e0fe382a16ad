#pragma once
// The global L2 norm of a list of tensors and the scaling that clips it, as
// torch.nn.utils.clip_grad_norm_: three steps, so that on CUDA (kernels/cuda/grad_norm.h,
// the same functions plus a stream) nothing waits for the host. f32 and f64 here.
// Sums of squares accumulate in double, chunk by chunk (kernels/common/multi_tensor.h), and
// the chunks' partial sums add up in a fixed order: the same inputs give the same bits.
#include <cstdint>

#include "base/dtype.h"

namespace sonata::kernels::cpu {

// partials[k] = sum of x^2 over chunk k of the tensors, numbered tensor by tensor; partials
// holds chunk_count(numels, count) doubles.
void squared_norm_partials(DType dtype, const void* const* tensors, const int64_t* numels,
                           int64_t count, double* partials);
// result[0] = sqrt(sum of the partials), the norm; result[1] = min(max_norm / (norm + 1e-6), 1),
// the factor that clips it (NaN when the norm is).
void clip_coefficient(const double* partials, int64_t partial_count, double max_norm,
                      double* result);
// tensors[t][i] *= *factor, the product in the tensor's compute type.
void scale_tensors(DType dtype, void* const* tensors, const int64_t* numels, int64_t count,
                   const double* factor);

}  // namespace sonata::kernels::cpu

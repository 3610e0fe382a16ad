#pragma once
// CUDA twin of kernels/cpu/grad_norm.h: the same three steps and chunk layout, asynchronous
// on `stream`, so clipping by the global norm never waits for the host. f16, bf16, f32 and
// f64 tensors; sums of squares accumulate in double. `partials` and `result` are device
// memory, as are the tensors; the pointer and size arrays are host memory.
#include <cstdint>

#include <cuda_runtime_api.h>

#include "base/dtype.h"

namespace sonata::kernels::cuda {

void squared_norm_partials(DType dtype, const void* const* tensors, const int64_t* numels,
                           int64_t count, double* partials, cudaStream_t stream);
void clip_coefficient(const double* partials, int64_t partial_count, double max_norm,
                      double* result, cudaStream_t stream);
void scale_tensors(DType dtype, void* const* tensors, const int64_t* numels, int64_t count,
                   const double* factor, cudaStream_t stream);

}  // namespace sonata::kernels::cuda

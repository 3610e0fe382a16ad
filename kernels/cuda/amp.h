#pragma once
// CUDA twin of kernels/cpu/amp.h: the loss scaler's fused unscale-and-check over a list of
// tensors (one launch, multi_tensor.cuh) and its scale update, asynchronous on `stream`, so
// that the overflow flag and the scale never leave the device. f16, bf16, f32 and f64
// tensors; the tensors and every scalar pointer are device memory, the pointer and size
// arrays host memory.
#include <cstdint>

#include <cuda_runtime_api.h>

#include "base/dtype.h"

namespace sonata::kernels::cuda {

void non_finite_check_and_unscale(DType dtype, void* const* tensors, const int64_t* numels,
                                  int64_t count, float* found_inf, const float* inv_scale,
                                  cudaStream_t stream);
void update_scale(float* scale, float* inv_scale, int32_t* growth_tracker, float* found_inf,
                  double growth_factor, double backoff_factor, int64_t growth_interval,
                  cudaStream_t stream);

}  // namespace sonata::kernels::cuda

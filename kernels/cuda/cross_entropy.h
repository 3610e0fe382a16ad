#pragma once
// Fused log_softmax + negative log-likelihood (class weights, ignore_index, label smoothing)
// over contiguous [outer, classes, inner] scores, f16 / bf16 / f32 / f64 with fp32
// accumulation for half types. Same functions and contracts as kernels/cpu/cross_entropy.h
// (log_sum_exp is [positions, 2]: max and shifted log-sum), plus a trailing stream. A target
// outside [0, classes) (other than ignore_index) gives NaN loss and gradient at its position:
// targets on the device are not read back by the host.
#include <cstdint>

#include <cuda_runtime_api.h>

#include "base/dtype.h"

namespace sonata::kernels::cuda {

void cross_entropy_forward(DType dtype, const void* scores, const int64_t* target,
                           const void* weight, int64_t outer, int64_t classes, int64_t inner,
                           int64_t ignore_index, double label_smoothing, bool normalize, void* loss,
                           void* target_weight, void* log_sum_exp, cudaStream_t stream);

void cross_entropy_backward(DType dtype, const void* grad_loss, const void* scores,
                            const int64_t* target, const void* weight, const void* log_sum_exp,
                            int64_t outer, int64_t classes, int64_t inner, int64_t ignore_index,
                            double label_smoothing, bool normalize, void* grad_scores,
                            cudaStream_t stream);

}  // namespace sonata::kernels::cuda

#pragma once
// CUDA twin of kernels/cpu/optimizer.h: the same fused updates, all `count` tensors of a call
// in one launch (more only when the list outgrows one launch's arguments), asynchronous on
// `stream`. f32 parameters, and f16 / bf16 parameters with an fp32 `master` copy: the kernel
// reads the half gradient, updates the master and the fp32 state, and writes the master
// rounded to the half parameter. The scaling pointers are device memory.
#include <cstdint>

#include <cuda_runtime_api.h>

#include "base/dtype.h"
#include "kernels/common/optimizer.h"

namespace sonata::kernels::cuda {

void sgd_step(DType dtype, const SgdTensors* tensors, int64_t count, const SgdHyper& hyper,
              const GradScaling& scaling, cudaStream_t stream);
void adam_step(DType dtype, const AdamTensors* tensors, int64_t count, const AdamHyper& hyper,
               const GradScaling& scaling, cudaStream_t stream);

}  // namespace sonata::kernels::cuda

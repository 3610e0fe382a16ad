#pragma once
// Fused optimizer updates on the CPU: one pass over each parameter, its gradient and its
// state, with the arithmetic of kernels/common/optimizer.h (torch.optim semantics). The
// reference for kernels/cuda/optimizer.h, which has the same functions plus a stream.
// f32 and f64 parameters; grads and state share the parameter's dtype; `master` must be null
// (half parameters with fp32 masters are a CUDA feature). Each call updates `count` tensors
// with one set of hyper-parameters; the scaling pointers are host memory here.
#include <cstdint>

#include "base/dtype.h"
#include "kernels/common/optimizer.h"

namespace sonata::kernels::cpu {

void sgd_step(DType dtype, const SgdTensors* tensors, int64_t count, const SgdHyper& hyper,
              const GradScaling& scaling);
void adam_step(DType dtype, const AdamTensors* tensors, int64_t count, const AdamHyper& hyper,
               const GradScaling& scaling);

}  // namespace sonata::kernels::cpu

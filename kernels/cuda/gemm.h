#pragma once
// Batched GEMM (see kernels/common/gemm_shape.h) through cuBLAS: f16 and bf16 on tensor cores
// with fp32 accumulation (split-K reductions included), f32 on TF32 tensor cores only under
// --tf32 all (base/math_mode.h), else full fp32; f64. Asynchronous on `stream`.
#include <cstdint>

#include <cuda_runtime_api.h>

#include "base/dtype.h"
#include "kernels/common/gemm_shape.h"

namespace sonata::kernels::cuda {

void gemm(DType dtype, const GemmShape& shape, double alpha, const void* a, const void* b,
          double beta, void* c, cudaStream_t stream);

// Makes the device's cuBLAS handle and `stream`'s workspace now (the calling thread's current
// device must be `device`), before the memory pool has grown: with plain cudaMalloc, the
// workspace cannot come from memory the pool keeps cached.
void reserve_gemm_workspace(int device, cudaStream_t stream);

}  // namespace sonata::kernels::cuda

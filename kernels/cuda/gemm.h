#pragma once
// Batched GEMM (see kernels/common/gemm_shape.h) through cuBLAS: f16 and bf16 with fp32
// accumulation, f32 (no TF32 unless asked), f64; asynchronous on `stream`.
#include <cstdint>

#include <cuda_runtime_api.h>

#include "base/dtype.h"
#include "kernels/common/gemm_shape.h"

namespace sonata::kernels::cuda {

void gemm(DType dtype, const GemmShape& shape, double alpha, const void* a, const void* b,
          double beta, void* c, cudaStream_t stream);

}  // namespace sonata::kernels::cuda

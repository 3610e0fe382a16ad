#pragma once
// Batched GEMM (see kernels/common/gemm_shape.h) through OpenBLAS: f32 and f64.
#include <cstdint>

#include "base/dtype.h"
#include "kernels/common/gemm_shape.h"

namespace sonata::kernels::cpu {

void gemm(DType dtype, const GemmShape& shape, double alpha, const void* a, const void* b,
          double beta, void* c);

// The kernel family OpenBLAS chose ("SkylakeX", "Haswell", ...), for benchmark reports.
const char* blas_core_name();

}  // namespace sonata::kernels::cpu

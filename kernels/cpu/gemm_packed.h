#pragma once
// Single-precision GEMM written by hand (Goto/BLIS blocking): op(A) and op(B) are packed into
// cache-sized panels, and a register tile accumulates each panel pair: 8 x 48 with AVX-512
// (24 of the 32 zmm registers), 6 x 16 with AVX2 (12 of the 16 ymm registers). Compiled once
// per CPU capability and picked at run time (kernels/cpu/capability.h); the baseline has none.
//
// Why not OpenBLAS here: these machines pin OpenBLAS to its Haswell (AVX2) kernels
// (OPENBLAS_CORETYPE=Haswell, as older OpenBLAS releases misbehave on their CPUs), which use
// half of a 512-bit FMA unit. The convolutions' and the LSTM input projections' products are
// most of a CPU training step, so they take this path where the CPU has AVX2 or AVX-512;
// double and the baseline capability keep OpenBLAS, and the skinny products keep gemm_skinny.
#include "kernels/common/gemm_shape.h"

namespace sonata::kernels::cpu {

// True when the active capability has a packed kernel (avx2, avx512) and `shape` (one
// product) is large enough for packing to pay: about 1 MFLOP, m >= 8, n >= 24, k >= 16.
bool packed_sgemm_applies(const GemmShape& shape);

// One product of `shape` (its batch fields are ignored), threaded over the OpenMP team.
// Accumulates in float, like sgemm; C is not read when beta is 0.
void packed_sgemm(const GemmShape& shape, float alpha, const float* a, const float* b, float beta,
                  float* c);

}  // namespace sonata::kernels::cpu

#pragma once
// Single-precision GEMM written by hand for AVX-512 (Goto/BLIS blocking): op(A) and op(B) are
// packed into cache-sized panels, and an 8 x 48 register tile accumulates each panel pair.
//
// Why not OpenBLAS here: these machines pin OpenBLAS to its Haswell (AVX2) kernels
// (OPENBLAS_CORETYPE=Haswell, as older OpenBLAS releases misbehave on their CPUs), which use
// half of a 512-bit FMA unit. The convolutions' and the LSTM input projections' products are
// most of a CPU training step, so they take this path where the CPU has AVX-512; double and
// the non-AVX-512 builds keep OpenBLAS, and the skinny products keep gemm_skinny.
#include "kernels/common/gemm_shape.h"

namespace sonata::kernels::cpu {

// True when this build has the AVX-512 kernel and `shape` (one product) is large enough for
// packing to pay: about 1 MFLOP and no dimension below one register tile's.
bool packed_sgemm_applies(const GemmShape& shape);

// One product of `shape` (its batch fields are ignored), threaded over the OpenMP team.
// Accumulates in float, like sgemm; C is not read when beta is 0.
void packed_sgemm(const GemmShape& shape, float alpha, const float* a, const float* b, float beta,
                  float* c);

}  // namespace sonata::kernels::cpu

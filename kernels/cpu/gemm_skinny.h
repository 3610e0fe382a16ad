#pragma once
// GEMMs with few rows (m <= kSkinny: an RNN step over a small batch, a classifier on a batch
// of 8) or a short inner dimension (k <= kSkinny: their weight gradients), written by hand.
// OpenBLAS packs the whole of the large operand on every call, which costs more than such a
// product itself: an LSTM step's [8 x 256] x [256 x 1024] ran at 14 GFLOP/s. Here the large
// operand is streamed once, in its own layout, and every loop over memory is contiguous.
// Accumulates in the data type, like the BLAS it stands in for.
#include "kernels/common/gemm_shape.h"

namespace sonata::kernels::cpu {

inline constexpr int64_t kSkinny = 16;

bool skinny_gemm_applies(const GemmShape& shape);

// One product of `shape` (its batch fields are ignored).
template <typename T>
void skinny_gemm(const GemmShape& shape, T alpha, const T* a, const T* b, T beta, T* c);

extern template void skinny_gemm<float>(const GemmShape&, float, const float*, const float*, float,
                                        float*);
extern template void skinny_gemm<double>(const GemmShape&, double, const double*, const double*,
                                         double, double*);

}  // namespace sonata::kernels::cpu

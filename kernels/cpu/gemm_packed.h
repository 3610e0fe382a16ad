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
#include "kernels/common/conv_shape.h"
#include "kernels/common/gemm_shape.h"

namespace sonata::kernels::cpu {

// True when the active capability has a packed kernel (avx2, avx512) and `shape` (one
// product) is large enough for packing to pay: about 1 MFLOP, m >= 8, n >= 24, k >= 16.
bool packed_sgemm_applies(const GemmShape& shape);

// One product of `shape` (its batch fields are ignored), threaded over the OpenMP team.
// Accumulates in float, like sgemm; C is not read when beta is 0.
void packed_sgemm(const GemmShape& shape, float alpha, const float* a, const float* b, float beta,
                  float* c);

// A convolution's im2col columns as a GEMM operand, read from the images while the panels
// are packed, so that the [patch, images * hw_out] matrix is never written out (for a
// 64-channel 128 x 128 VGG layer it is 300 MB, written once and read back by every product).
// Row r = (input channel, kernel row, kernel column), column = (image of the chunk, output
// pixel); zero where the window reaches into the padding.
struct ImageColumns {
  Conv2dShape shape;         // the geometry (shape.n is not used)
  const float* x = nullptr;  // the chunk's first image, NCHW
  int64_t images = 0;
};

// packed_sgemm with op(B) the columns (shape.trans_b false: [patch, images * hw_out], the
// forward) or their transpose (shape.trans_b true: [images * hw_out, patch], the weight
// gradient); shape.ldb is not used. Only where packed_sgemm_applies(shape).
void packed_sgemm_image(const GemmShape& shape, float alpha, const float* a,
                        const ImageColumns& columns, float beta, float* c);

}  // namespace sonata::kernels::cpu

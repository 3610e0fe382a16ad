#pragma once
// Dropout with Philox masks. Element e draws u = philox_uniform(lane e % 4 of block
// offset + e / 4 of stream `subsequence`) -- the mapping of kernels/cpu/random.h -- and
// is kept when u >= p (probability 1 - p): y[e] = x[e] * (kept ? scale : 0). The keep test
// compares floats (p rounded to float), so the CUDA twin in kernels/cuda/dropout.h keeps
// exactly the same elements; the backward is the same call on the gradient.
#include <cstdint>

#include "base/dtype.h"

namespace sonata::kernels::cpu {

// f32 and f64; scale is applied in the element's compute type (float for f32).
void dropout(DType dtype, const void* x, void* y, int64_t n, double p, double scale, uint64_t seed,
             uint64_t subsequence, uint64_t offset);

}  // namespace sonata::kernels::cpu

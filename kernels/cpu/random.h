#pragma once
// Philox-driven fills. Element e uses block (offset + e / 4) of stream `subsequence`, lane
// e % 4, so the CUDA twins in kernels/cuda/random.h write the same values.
#include <cstdint>

#include "base/dtype.h"

namespace sonata::kernels::cpu {

// Uniform in [low, high).
void uniform(DType dtype, void* out, int64_t n, uint64_t seed, uint64_t subsequence,
             uint64_t offset, double low, double high);
// Normal(mean, std) by Box-Muller on lanes (0,1) and (2,3) of each block.
void normal(DType dtype, void* out, int64_t n, uint64_t seed, uint64_t subsequence, uint64_t offset,
            double mean, double std);

}  // namespace sonata::kernels::cpu

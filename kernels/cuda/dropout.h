#pragma once
// Dropout with Philox masks, f16 / bf16 / f32 / f64: the same elements kept as the CPU's
// kernels/cpu/dropout.h for the same (seed, subsequence, offset), plus a trailing stream.
#include <cstdint>

#include <cuda_runtime_api.h>

#include "base/dtype.h"

namespace sonata::kernels::cuda {

// y[e] = x[e] * (philox_uniform(lane e % 4 of block offset + e / 4) >= float(p) ? scale : 0),
// with the product in float (double for f64).
void dropout(DType dtype, const void* x, void* y, int64_t n, double p, double scale, uint64_t seed,
             uint64_t subsequence, uint64_t offset, cudaStream_t stream);

}  // namespace sonata::kernels::cuda

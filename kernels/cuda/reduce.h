#pragma once
// CUDA twin of kernels/cpu/reduce.h: same functions and semantics, asynchronous on `stream`.
// Float kernels take f16, bf16, f32 and f64 and accumulate half types in f32.
#include <cstdint>

#include <cuda_runtime_api.h>

#include "base/dtype.h"
#include "kernels/common/reduce_op.h"

namespace sonata::kernels::cuda {

void reduce(ReduceOp op, DType dtype, const void* in, void* out, int64_t outer, int64_t n,
            int64_t inner, cudaStream_t stream);
// Maximum and the index of its first occurrence (NaN counts as the maximum), as torch.max(dim).
void max_with_index(DType dtype, const void* in, void* values, int64_t* indices, int64_t outer,
                    int64_t n, int64_t inner, cudaStream_t stream);

}  // namespace sonata::kernels::cuda

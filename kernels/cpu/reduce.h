#pragma once
// CPU reductions over the middle axis of a contiguous [outer, n, inner] block:
// out[o, i] = reduce over r of in[o, r, i]. f32 accumulates in f64 here (the reference).
#include <cstdint>

#include "base/dtype.h"
#include "kernels/common/reduce_op.h"

namespace sonata::kernels::cpu {

void reduce(ReduceOp op, DType dtype, const void* in, void* out, int64_t outer, int64_t n,
            int64_t inner);
// Maximum and the index of its first occurrence (NaN counts as the maximum), as torch.max(dim).
void max_with_index(DType dtype, const void* in, void* values, int64_t* indices, int64_t outer,
                    int64_t n, int64_t inner);

}  // namespace sonata::kernels::cpu

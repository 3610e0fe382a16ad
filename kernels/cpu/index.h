#pragma once
// Indexing along one axis of contiguous blocks. `in` is [outer, in_n, inner]; indices are i64
// and checked against the axis (a bad index throws sonata::Error naming it).
#include <cstdint>

#include "base/dtype.h"

namespace sonata::kernels::cpu {

// out[o, j, i] = in[o, index[j], i], out is [outer, index_n, inner].
void index_select(DType dtype, const void* in, const int64_t* index, void* out, int64_t outer,
                  int64_t in_n, int64_t inner, int64_t index_n);
// out[o, index[j], i] += src[o, j, i] (the backward of index_select).
void index_add(DType dtype, const void* src, const int64_t* index, void* out, int64_t outer,
               int64_t out_n, int64_t inner, int64_t index_n);
// out[o, j, i] = in[o, index[o, j, i], i]; index and out are [outer, index_n, inner].
void gather(DType dtype, const void* in, const int64_t* index, void* out, int64_t outer,
            int64_t in_n, int64_t inner, int64_t index_n);
// out[o, index[o, j, i], i] += src[o, j, i]; out is [outer, out_n, inner].
void scatter_add(DType dtype, const void* src, const int64_t* index, void* out, int64_t outer,
                 int64_t out_n, int64_t inner, int64_t index_n);

}  // namespace sonata::kernels::cpu

#pragma once
// CUDA twin of kernels/cpu/index.h. `in` is [outer, in_n, inner]; i64 indices are
// not checked on the device (that would need a host sync): the engine checks
// indices that live on the CPU, and an out-of-range index on the GPU is skipped.
// index_add / scatter_add use atomics for f32 / f64 (sums not bitwise reproducible) unless
// deterministic_algorithms() is on; then, and always for f16 / bf16, each output element sums
// its sources in increasing j in the compute type (fp32 for halves), as the CPU does: f32 and
// f64 results then equal the CPU's bit for bit. That path sorts, with stream-ordered scratch
// of about 32 bytes per source element.
#include <cstdint>

#include <cuda_runtime_api.h>

#include "base/dtype.h"

namespace sonata::kernels::cuda {

// out[o, j, i] = in[o, index[j], i], out is [outer, index_n, inner].
void index_select(DType dtype, const void* in, const int64_t* index, void* out, int64_t outer,
                  int64_t in_n, int64_t inner, int64_t index_n, cudaStream_t stream);
// out[o, index[j], i] += src[o, j, i] (the backward of index_select).
void index_add(DType dtype, const void* src, const int64_t* index, void* out, int64_t outer,
               int64_t out_n, int64_t inner, int64_t index_n, cudaStream_t stream);
// out[o, j, i] = in[o, index[o, j, i], i]; index and out are [outer, index_n, inner].
void gather(DType dtype, const void* in, const int64_t* index, void* out, int64_t outer,
            int64_t in_n, int64_t inner, int64_t index_n, cudaStream_t stream);
// out[o, index[o, j, i], i] += src[o, j, i]; out is [outer, out_n, inner].
void scatter_add(DType dtype, const void* src, const int64_t* index, void* out, int64_t outer,
                 int64_t out_n, int64_t inner, int64_t index_n, cudaStream_t stream);

}  // namespace sonata::kernels::cuda

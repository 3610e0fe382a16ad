#pragma once
// Work along the middle axis of a contiguous [outer, n, inner] block: reductions, softmax
// and their backward passes all see it as outer * inner "lines" of n elements, line j
// starting at (j / inner) * n * inner + j % inner with stride inner. Included by .cu only.
//
// inner == 1 (rows): a team of threads shares a line and reads it coalesced, a warp for
//   short rows (several rows per block) or the whole block for long ones.
// inner > 1 (columns): a (32 x kColumnLanes) block takes 32 neighbouring lines, so each
//   load instruction reads 32 consecutive elements of the inner axis; the kColumnLanes rows
//   of threads split n between them.
//
// A line operation is a functor called as
//   op(line, base, stride, first, step, valid, allreduce)
// where the thread visits elements first, first + step, ... < n of the line at
// base + r * stride, and allreduce(value, combine) combines a value over the threads sharing
// the line. Every thread of the block calls it the same number of times, including threads
// with valid == false (past the last line), which must not touch memory.
#include <cstdint>

#include "kernels/cuda/launch.cuh"

namespace sonata::kernels::cuda {

inline constexpr int kRowBlock = 512;       // threads sharing one long row
inline constexpr int64_t kShortRow = 1024;  // rows up to this length get one warp each
inline constexpr int kColumnLanes = 8;      // threads splitting n in the column layout

// Every thread combines the per-warp results in the same order, so all hold the same bits.
template <int kThreads>
struct BlockAllReduce {
  template <typename V, typename Combine>
  __device__ V operator()(V value, Combine combine) const {
    constexpr int kWarps = kThreads / kWarpSize;
    __shared__ V per_warp[kWarps];
    value = warp_allreduce(value, combine);
    if (threadIdx.x % kWarpSize == 0) per_warp[threadIdx.x / kWarpSize] = value;
    __syncthreads();
    value = per_warp[0];
#pragma unroll
    for (int w = 1; w < kWarps; ++w) value = combine(value, per_warp[w]);
    __syncthreads();  // per_warp is reused by the next call
    return value;
  }
};

struct WarpAllReduce {
  template <typename V, typename Combine>
  __device__ V operator()(V value, Combine combine) const {
    return warp_allreduce(value, combine);
  }
};

struct ColumnAllReduce {
  template <typename V, typename Combine>
  __device__ V operator()(V value, Combine combine) const {
    __shared__ V partial[kColumnLanes][kWarpSize];
    partial[threadIdx.y][threadIdx.x] = value;
    __syncthreads();
    value = partial[0][threadIdx.x];
#pragma unroll
    for (int lane = 1; lane < kColumnLanes; ++lane)
      value = combine(value, partial[lane][threadIdx.x]);
    __syncthreads();
    return value;
  }
};

// One warp per row: the rows of a warp differ, but warps only synchronise with themselves.
template <typename LineOp>
__global__ void __launch_bounds__(kBlockSize) warp_rows_kernel(int64_t rows, int64_t n, LineOp op) {
  constexpr int kWarpsPerBlock = kBlockSize / kWarpSize;
  const int lane = int(threadIdx.x % kWarpSize);
  const int64_t first_row = int64_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / kWarpSize;
  for (int64_t row = first_row; row < rows; row += int64_t(gridDim.x) * kWarpsPerBlock)
    op(row, row * n, int64_t(1), lane, kWarpSize, true, WarpAllReduce{});
}

// One block per row; the row loop is uniform over the block, as __syncthreads needs.
template <typename LineOp>
__global__ void __launch_bounds__(kRowBlock) block_rows_kernel(int64_t rows, int64_t n, LineOp op) {
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x)
    op(row, row * n, int64_t(1), int(threadIdx.x), kRowBlock, true, BlockAllReduce<kRowBlock>{});
}

template <typename LineOp>
__global__ void __launch_bounds__(kWarpSize* kColumnLanes)
    columns_kernel(int64_t lines, int64_t n, int64_t inner, LineOp op) {
  for (int64_t tile = blockIdx.x; tile * kWarpSize < lines; tile += gridDim.x) {
    const int64_t line = tile * kWarpSize + threadIdx.x;
    const bool valid = line < lines;
    const int64_t o = line / inner, i = line - o * inner;
    op(line, o * n * inner + i, inner, int(threadIdx.y), kColumnLanes, valid, ColumnAllReduce{});
  }
}

// Runs `op` over the outer * inner lines of [outer, n, inner]; the caller follows with
// CUDA_CHECK_LAUNCH(). Lines of length 0 still get one call each (with no elements), so
// that reductions write their identity.
template <typename LineOp>
void launch_lines(int64_t outer, int64_t n, int64_t inner, cudaStream_t stream, LineOp op) {
  const int64_t lines = outer * inner;
  if (lines <= 0) return;
  if (inner == 1 && n <= kShortRow) {
    constexpr int kWarpsPerBlock = kBlockSize / kWarpSize;
    warp_rows_kernel<<<blocks_for(lines, kWarpsPerBlock), kBlockSize, 0, stream>>>(lines, n, op);
  } else if (inner == 1) {
    block_rows_kernel<<<blocks_for(lines, 1), kRowBlock, 0, stream>>>(lines, n, op);
  } else {
    const dim3 block(kWarpSize, kColumnLanes);
    columns_kernel<<<blocks_for(lines, kWarpSize), block, 0, stream>>>(lines, n, inner, op);
  }
}

}  // namespace sonata::kernels::cuda

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
//
// Pure reductions (one value per line) go through launch_line_reduction instead, which may
// also split each line over several blocks when there are few lines
// (kernels/common/line_split.h). Its reducer R provides
//   using Acc;  Acc identity();  Acc lift(at, r)  (input element at offset `at`, index r
//   along its line);  Acc combine(a, b)  (commutative);  void write(line, acc)
// as const __device__ members.
#include <cstdint>
#include <initializer_list>

#include "kernels/common/line_split.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/stream_scratch.h"

namespace sonata::kernels::cuda {

inline constexpr int kRowBlock = 512;             // threads sharing one long row
inline constexpr int64_t kShortRow = kShortLine;  // rows up to this length get one warp each
inline constexpr int kColumnLanes = 8;            // threads splitting n in the column layout
static_assert(kColumnTile == kWarpSize, "a column block spans one warp of lines");

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
    launch(warp_rows_kernel<LineOp>, blocks_for(lines, kWarpsPerBlock), kBlockSize, 0, stream,
           lines, n, op);
  } else if (inner == 1) {
    launch(block_rows_kernel<LineOp>, blocks_for(lines, 1), kRowBlock, 0, stream, lines, n, op);
  } else {
    const dim3 block(kWarpSize, kColumnLanes);
    launch(columns_kernel<LineOp>, blocks_for(lines, kWarpSize), block, 0, stream, lines, n, inner,
           op);
  }
}

// ---------------------------------------------------------------------------------------
// 16-byte packs along contiguous rows, for line operations that opt in.

// Rows (inner == 1) can be walked in packs when each starts on a 16-byte boundary: n a
// multiple of the pack and every pointer aligned (a view at an odd offset falls back).
template <typename T>
bool rows_fit_packs(int64_t n, int64_t inner, std::initializer_list<const void*> pointers) {
  constexpr int kWidth = kPackWidth<T>;
  if (inner != 1 || n % kWidth != 0) return false;
  for (const void* p : pointers)
    if (!is_aligned(p, sizeof(T) * kWidth)) return false;
  return true;
}

// visit(r, a[r], b[r]) (values in the compute type) over this thread's share of a line: packs
// first, first + step, ... of the row when `packed`, else elements first, first + step, ...
// at `stride`. `b` may be null (then visit gets 0 for it) when only `a` is read.
template <typename T, typename Visit>
__device__ __forceinline__ void for_line_values(const T* a, const T* b, int64_t n, int64_t stride,
                                                int first, int step, bool packed, Visit&& visit) {
  using C = compute_t<T>;
  constexpr int kWidth = kPackWidth<T>;
  if (packed) {
    for (int64_t q = first; q < n / kWidth; q += step) {
      const Pack<T, kWidth> pa = load_pack<kWidth>(a, q);
      Pack<T, kWidth> pb{};
      if (b) pb = load_pack<kWidth>(b, q);
#pragma unroll
      for (int k = 0; k < kWidth; ++k)
        visit(q * kWidth + k, load(pa.v[k]), b ? load(pb.v[k]) : C(0));
    }
  } else {
    for (int64_t r = first; r < n; r += step)
      visit(r, load(a[r * stride]), b ? load(b[r * stride]) : C(0));
  }
}

// out[r] = f(r, a[r], b[r]) over the same share as for_line_values.
template <typename T, typename F>
__device__ __forceinline__ void map_line_values(const T* a, const T* b, T* out, int64_t n,
                                                int64_t stride, int first, int step, bool packed,
                                                F&& f) {
  using C = compute_t<T>;
  constexpr int kWidth = kPackWidth<T>;
  if (packed) {
    for (int64_t q = first; q < n / kWidth; q += step) {
      const Pack<T, kWidth> pa = load_pack<kWidth>(a, q);
      Pack<T, kWidth> pb{}, result;
      if (b) pb = load_pack<kWidth>(b, q);
#pragma unroll
      for (int k = 0; k < kWidth; ++k)
        result.v[k] = store<T>(f(q * kWidth + k, load(pa.v[k]), b ? load(pb.v[k]) : C(0)));
      store_pack<kWidth>(out, q, result);
    }
  } else {
    for (int64_t r = first; r < n; r += step)
      out[r * stride] = store<T>(f(r, load(a[r * stride]), b ? load(b[r * stride]) : C(0)));
  }
}

// ---------------------------------------------------------------------------------------
// Reductions, split over several blocks per line when there are few lines.

// A reducer as a line operation: the one-kernel path, through launch_lines.
template <typename R>
struct ReductionLine {
  R reducer;
  int64_t n;

  template <typename AllReduce>
  __device__ void operator()(int64_t line, int64_t base, int64_t stride, int first, int step,
                             bool valid, AllReduce allreduce) const {
    using Acc = typename R::Acc;
    Acc acc = reducer.identity();
    if (valid) {
#pragma unroll 4
      for (int64_t r = first; r < n; r += step)
        acc = reducer.combine(acc, reducer.lift(base + r * stride, r));
    }
    acc = allreduce(acc, [&](Acc a, Acc b) { return reducer.combine(a, b); });
    if (valid && first == 0) reducer.write(line, acc);
  }
};

// Piece s of `splits` covers [n * s / splits, n * (s + 1) / splits) of its line.
__device__ __forceinline__ int64_t piece_begin(int64_t n, int64_t s, int64_t splits) {
  return n * s / splits;
}

// Rows (inner == 1): one block per (line, piece), partials[line * splits + s].
template <typename R>
__global__ void __launch_bounds__(kRowBlock)
    split_rows_kernel(int64_t lines, int64_t n, int64_t splits, R reducer,
                      typename R::Acc* partials) {
  using Acc = typename R::Acc;
  const auto combine = [&](Acc a, Acc b) { return reducer.combine(a, b); };
  for (int64_t piece = blockIdx.x; piece < lines * splits; piece += gridDim.x) {
    const int64_t line = piece / splits, s = piece - line * splits;
    const int64_t end = piece_begin(n, s + 1, splits);
    Acc acc = reducer.identity();
    for (int64_t r = piece_begin(n, s, splits) + threadIdx.x; r < end; r += kRowBlock)
      acc = combine(acc, reducer.lift(line * n + r, r));
    acc = BlockAllReduce<kRowBlock>{}(acc, combine);
    if (threadIdx.x == 0) partials[piece] = acc;
  }
}

// Columns (inner > 1): blockIdx.y is the piece; a block reads 32 neighbouring lines' rows of
// that piece, so loads stay coalesced along the inner axis.
template <typename R>
__global__ void __launch_bounds__(kWarpSize* kColumnLanes)
    split_columns_kernel(int64_t lines, int64_t n, int64_t inner, int64_t splits, R reducer,
                         typename R::Acc* partials) {
  using Acc = typename R::Acc;
  const auto combine = [&](Acc a, Acc b) { return reducer.combine(a, b); };
  const int64_t s = blockIdx.y;
  const int64_t begin = piece_begin(n, s, splits), end = piece_begin(n, s + 1, splits);
  for (int64_t tile = blockIdx.x; tile * kWarpSize < lines; tile += gridDim.x) {
    const int64_t line = tile * kWarpSize + threadIdx.x;
    const bool valid = line < lines;
    const int64_t o = line / inner, base = o * n * inner + (line - o * inner);
    Acc acc = reducer.identity();
    if (valid)
      for (int64_t r = begin + threadIdx.y; r < end; r += kColumnLanes)
        acc = combine(acc, reducer.lift(base + r * inner, r));
    acc = ColumnAllReduce{}(acc, combine);
    if (valid && threadIdx.y == 0) partials[line * splits + s] = acc;
  }
}

// One thread per line adds its pieces in piece order: the same bits on every run.
template <typename R>
__global__ void __launch_bounds__(kBlockSize)
    combine_pieces_kernel(int64_t lines, int64_t splits, R reducer,
                          const typename R::Acc* partials) {
  for (int64_t line = thread_index(); line < lines; line += thread_count()) {
    typename R::Acc acc = partials[line * splits];
    for (int64_t s = 1; s < splits; ++s) acc = reducer.combine(acc, partials[line * splits + s]);
    reducer.write(line, acc);
  }
}

// Reduces each of the outer * inner lines of [outer, n, inner] to reducer.write(line, value).
// The partials of a split live in stream-ordered scratch (kernels/cuda/stream_scratch.h,
// from the device's pool, which the engine keeps cached), freed on the same stream after
// the combine pass, on every path. The caller follows with CUDA_CHECK_LAUNCH().
template <typename R>
void launch_line_reduction(int64_t outer, int64_t n, int64_t inner, cudaStream_t stream,
                           R reducer) {
  const int64_t lines = outer * inner;
  if (lines <= 0) return;
  const int64_t splits = line_reduction_splits(outer, n, inner);
  if (splits == 1) {
    launch_lines(outer, n, inner, stream, ReductionLine<R>{reducer, n});
    return;
  }
  using Acc = typename R::Acc;
  const StreamScratch scratch(sizeof(Acc) * size_t(lines * splits), stream);
  Acc* partials = scratch.as<Acc>();
  if (inner == 1) {
    launch(split_rows_kernel<R>, blocks_for(lines * splits, 1), kRowBlock, 0, stream, lines, n,
           splits, reducer, partials);
  } else {
    const dim3 grid(blocks_for(lines, kWarpSize), unsigned(splits));
    launch(split_columns_kernel<R>, grid, dim3(kWarpSize, kColumnLanes), 0, stream, lines, n, inner,
           splits, reducer, partials);
  }
  CUDA_CHECK_LAUNCH();
  linear_kernel(combine_pieces_kernel<R>, 0, stream, lines, splits, reducer, partials);
  CUDA_CHECK_LAUNCH();
}

}  // namespace sonata::kernels::cuda

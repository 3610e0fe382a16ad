#pragma once
// How many blocks each line of a CUDA reduction over [outer, n, inner] is split into
// (kernels/cuda/lines.cuh). With many lines, one block (long rows) or one 32-line tile
// (columns) per line already fills the GPU; with few long lines (a whole-tensor sum, the
// column sums of a bias gradient) those launches would run a handful of blocks, so each
// line is cut into `splits` pieces whose partials a second kernel combines in a fixed order.
// Host-side and pure, so that the CPU tests check the plan; the numbers do not depend on the
// device, so a reduction gives the same bits on every GPU.
#include <algorithm>
#include <cstdint>

namespace sonata::kernels {

// Rows up to this length get one warp each and are never split.
inline constexpr int64_t kShortLine = 1024;
// Neighbouring lines one column block reads together (a warp across the inner axis).
inline constexpr int64_t kColumnTile = 32;
// About two waves of blocks on a Hopper-class GPU (132 SMs): more pieces buy nothing.
inline constexpr int64_t kSplitTargetBlocks = 1024;
// Elements of one row piece, and rows of one column piece (times 32 lines): below these a
// block's start-up and the partial's round trip would cost more than its loads.
inline constexpr int64_t kMinRowPiece = 8192;
inline constexpr int64_t kMinColumnPiece = 256;
inline constexpr int64_t kMaxLineSplits = 1024;

// Pieces per line: 1 keeps the one-kernel path; more means partials, then a combine pass.
// When split, lines * splits stays below 2 * kColumnTile * kSplitTargetBlocks (the partials).
inline int64_t line_reduction_splits(int64_t outer, int64_t n, int64_t inner) {
  const int64_t lines = outer * inner;
  if (lines <= 0 || n <= 0) return 1;
  const bool rows = inner == 1;
  if (rows && n <= kShortLine) return 1;
  const int64_t blocks = rows ? lines : (lines + kColumnTile - 1) / kColumnTile;
  if (blocks >= kSplitTargetBlocks) return 1;
  const int64_t wanted = (kSplitTargetBlocks + blocks - 1) / blocks;
  const int64_t fit = n / (rows ? kMinRowPiece : kMinColumnPiece);
  return std::clamp<int64_t>(std::min({wanted, fit, kMaxLineSplits}), 1, kMaxLineSplits);
}

}  // namespace sonata::kernels

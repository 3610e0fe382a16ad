#pragma once
// How the CUDA batch-norm reductions (kernels/cuda/batch_norm.cu) spread over blocks: each
// channel's batch * spatial values are cut into `splits` runs, one partial per (channel, run)
// in the caller's workspace, merged in a fixed order. Host-side and pure, so that the CPU
// tests check the plan; it does not depend on the device (the same bits on every GPU).
//
// Planes (spatial > 1): a block per (run, channel). Columns (spatial == 1: BatchNorm1d over
// [N, C], and channels-last inputs, which the engine passes as [N * H * W, C, 1]): a block
// per (run, 32 neighbouring channels), each warp reading 32 consecutive channels of a row,
// so fewer blocks per run and more runs.
#include <algorithm>
#include <cstdint>

namespace sonata::kernels {

// A reduction block should see at least this many elements, or its start-up dominates.
inline constexpr int64_t kBatchNormElementsPerBlock = 16 * 1024;
// About one wave of 256-thread blocks on a Hopper-class GPU; more splits buy nothing.
inline constexpr int64_t kBatchNormTargetBlocks = 1024;
inline constexpr int64_t kBatchNormChannelTile = 32;

inline bool batch_norm_by_columns(int64_t spatial) {
  return spatial == 1;
}

// Runs each channel's reduction is split into (the workspace holds one partial per run).
inline int64_t batch_norm_reduce_splits(int64_t batch, int64_t channels, int64_t spatial) {
  const int64_t per_channel = batch * spatial;
  const bool columns = batch_norm_by_columns(spatial);
  // A column block reads kBatchNormChannelTile channels of each of its rows.
  const int64_t tile = columns ? kBatchNormChannelTile : 1;
  const int64_t rows_per_block = kBatchNormElementsPerBlock / tile;
  const int64_t wanted = (per_channel + rows_per_block - 1) / rows_per_block;
  const int64_t blocks_per_run = (std::max<int64_t>(channels, 1) + tile - 1) / tile;
  const int64_t room = std::max<int64_t>(1, kBatchNormTargetBlocks / blocks_per_run);
  return std::clamp<int64_t>(std::min(wanted, room), 1, kBatchNormTargetBlocks);
}

}  // namespace sonata::kernels

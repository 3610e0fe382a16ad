// The split plan of the CUDA batch-norm reductions (kernels/common/batch_norm_split.h):
// wide channels and long [rows, channels] columns fill the GPU, small inputs stay whole, and
// the grid never runs far past one wave.
#include <catch2/catch.hpp>

#include <cstdint>

#include "kernels/common/batch_norm_split.h"

using namespace sonata::kernels;

namespace {

int64_t blocks_per_run(int64_t channels, int64_t spatial) {
  return batch_norm_by_columns(spatial) ? (channels + 31) / 32 : channels;
}

}  // namespace

TEST_CASE("channels-last VGG batch norm fills the GPU by columns", "[core][batch_norm]") {
  // 64 x 224 x 224 rows of 64 channels, as the engine passes channels-last input: two
  // channel tiles per run, so the rows must be cut into hundreds of runs.
  const int64_t rows = int64_t(64) * 224 * 224;
  const int64_t splits = batch_norm_reduce_splits(rows, 64, 1);
  CHECK(splits * blocks_per_run(64, 1) >= 512);
  CHECK(splits * blocks_per_run(64, 1) <= kBatchNormTargetBlocks);
  CHECK(rows / splits * 32 >= kBatchNormElementsPerBlock);
}

TEST_CASE("planes keep one block per (run, channel)", "[core][batch_norm]") {
  // VGG's first layer in NCHW: 64 channels of 64 x 224 x 224.
  const int64_t splits = batch_norm_reduce_splits(64, 64, 224 * 224);
  CHECK(splits * 64 >= 512);
  CHECK(splits * 64 <= kBatchNormTargetBlocks);
  CHECK(batch_norm_reduce_splits(16, 8, 1) == 1);          // a small BatchNorm1d stays whole
  CHECK(batch_norm_reduce_splits(4, 3, 5 * 7) == 1);       // 140 values per channel
  CHECK(batch_norm_reduce_splits(1, 4096, 16 * 16) == 1);  // channels alone fill the GPU
}

TEST_CASE("batch-norm plans stay within one wave and above the block minimum",
          "[core][batch_norm]") {
  for (int64_t batch : {int64_t(1), int64_t(7), int64_t(256), int64_t(100003), int64_t(1) << 24})
    for (int64_t channels : {int64_t(1), int64_t(3), int64_t(33), int64_t(512), int64_t(5000)})
      for (int64_t spatial : {int64_t(1), int64_t(49), int64_t(50176)}) {
        INFO("batch " << batch << " channels " << channels << " spatial " << spatial);
        const int64_t splits = batch_norm_reduce_splits(batch, channels, spatial);
        REQUIRE(splits >= 1);
        if (splits > 1) {
          CHECK(splits * blocks_per_run(channels, spatial) <= kBatchNormTargetBlocks);
          const int64_t tile = batch_norm_by_columns(spatial) ? 32 : 1;
          // Each run still holds about a block's worth of elements (rounding up may leave
          // the last ones a little short).
          CHECK(batch * spatial * tile / splits >= kBatchNormElementsPerBlock / 2);
        }
      }
}

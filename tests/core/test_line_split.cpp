// The split plan of the CUDA line reductions (kernels/common/line_split.h): few long lines
// are cut into pieces that fill the GPU, many lines or short rows keep one block per line,
// and the partials always fit the room the kernels assume.
#include <catch2/catch.hpp>

#include <cstdint>

#include "kernels/common/line_split.h"

using namespace sonata::kernels;

namespace {

struct Reduction {
  int64_t outer, n, inner;
};

int64_t blocks_unsplit(const Reduction& r) {
  const int64_t lines = r.outer * r.inner;
  return r.inner == 1 ? lines : (lines + 31) / 32;
}

}  // namespace

TEST_CASE("a whole-tensor sum is split over enough blocks to fill the GPU", "[core][line_split]") {
  // 16 M elements in one row: one 512-thread block would do the whole sum.
  const int64_t splits = line_reduction_splits(1, int64_t(1) << 24, 1);
  CHECK(splits >= 512);
  CHECK((int64_t(1) << 24) / splits >= 8192);  // each piece still worth a block
}

TEST_CASE("column sums of a tall [N, C] block are split along N", "[core][line_split]") {
  // A bias gradient over 1 M rows of 10 channels: one 32-line tile without the split.
  const int64_t splits = line_reduction_splits(1, 1 << 20, 10);
  CHECK(splits >= 512);
  CHECK((int64_t(1) << 20) / splits >= 256);
}

TEST_CASE("many lines and short rows keep one block per line", "[core][line_split]") {
  CHECK(line_reduction_splits(4096, 1 << 20, 1) == 1);   // 4096 long rows fill the GPU
  CHECK(line_reduction_splits(1, 1 << 20, 65536) == 1);  // 2048 column tiles
  CHECK(line_reduction_splits(3, 1024, 1) == 1);         // warp rows, never split
  CHECK(line_reduction_splits(1, 5000, 1) == 1);         // too short to cut into 8 K pieces
  CHECK(line_reduction_splits(1, 200, 3) == 1);          // too short for 256-row pieces
  CHECK(line_reduction_splits(0, 1 << 20, 1) == 1);      // no lines
  CHECK(line_reduction_splits(5, 0, 1) == 1);            // empty lines still written once
}

TEST_CASE("split plans keep pieces large and the partials within their room",
          "[core][line_split]") {
  for (int64_t outer : {1, 2, 3, 7, 100, 1000, 1023, 1024, 5000})
    for (int64_t inner : {1, 2, 31, 33, 500, 32767, 40000})
      for (int64_t n : {int64_t(1), int64_t(1025), int64_t(8192), int64_t(16385), int64_t(100003),
                        int64_t(1) << 22}) {
        const Reduction r{outer, n, inner};
        INFO("outer " << outer << " n " << n << " inner " << inner);
        const int64_t splits = line_reduction_splits(outer, n, inner);
        REQUIRE(splits >= 1);
        REQUIRE(splits <= kMaxLineSplits);
        if (splits > 1) {  // the partials: one per piece of every line
          CHECK(outer * inner * splits <= 2 * kColumnTile * kSplitTargetBlocks);
          CHECK(n / splits >= (inner == 1 ? kMinRowPiece : kMinColumnPiece));
          CHECK(blocks_unsplit(r) < kSplitTargetBlocks);
          // Not so many pieces that the grid runs far past the target.
          CHECK(blocks_unsplit(r) * (splits - 1) < kSplitTargetBlocks);
        }
      }
}

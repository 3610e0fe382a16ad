#include "tests/cases/batch_norm_cases.h"

namespace sonata::testing {

const std::vector<BatchNormCase>& batch_norm_cases() {
  static const std::vector<BatchNormCase> cases = {
      {"BatchNorm1d rows", {6, 3}},
      {"3-D", {3, 4, 5}},
      {"4-D", {2, 3, 3, 4}},
      {"BatchNorm1d: [rows, channels], reduced by columns", {16, 8}},
      {"long columns: split over 79 runs", {40000, 3}, true},
      {"three channel tiles, the last one partial", {300, 70}, true},
      {"odd spatial size: scalar path", {4, 3, 5, 7}},
      {"16-byte packs", {8, 16, 8, 8}, true},
      {"VGG's last planes: 8-byte packs for f16 / bf16", {4, 8, 14, 14}, true},
      {"3-D, scalar path", {4, 6, 33}},
      {"65536 values per channel: split over several blocks", {16, 2, 64, 64}, true},
      {"columns in 16-byte packs, split over 2 runs", {1024, 64}, true},
      {"columns in 8-byte packs for f16 / bf16, 16-byte for f32", {24, 12}},
      {"40 channels: 5 or 10 packs a row (channels-last)", {2, 40, 12, 12}, true},
  };
  return cases;
}

const std::vector<MaskedBatchNormCase>& masked_batch_norm_cases() {
  static const std::vector<MaskedBatchNormCase> cases = {
      {"[N, C, T], ragged", {3, 2, 5}, {5, 3, 1}},
      {"[N, C, T, F]: DS2's layout", {3, 2, 6, 4}, {6, 2, 4}},
      {"a sample with no valid frame", {3, 2, 4, 3}, {4, 0, 3}},
      {"every sample full length: plain batch norm", {2, 3, 4, 2}, {4, 4}},
      {"one channel, two inner dims", {2, 1, 3, 2, 2}, {1, 3}},
      {"DS2's conv output: many blocks' worth of frames",
       {6, 4, 40, 16},
       {40, 35, 28, 20, 9, 1},
       true},
  };
  return cases;
}

}  // namespace sonata::testing

#include "tests/cases/pool_cases.h"

namespace sonata::testing {

const std::vector<MaxPoolCase>& max_pool_cases() {
  static const std::vector<MaxPoolCase> cases = {
      {"2x2 stride 2 (fast path)", {2, 3, 4, 6}, {2, 2}, {2, 2}, {0, 0}, {1, 1}, false},
      {"2x2 stride 2 on odd sizes", {1, 2, 5, 7}, {2, 2}, {2, 2}, {0, 0}, {1, 1}, false},
      {"3x3 stride 2 padding 1", {2, 2, 7, 6}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, false},
      {"overlapping 3x2 stride 1", {1, 2, 4, 5}, {3, 2}, {1, 1}, {0, 1}, {1, 1}, false},
      {"dilation 2", {1, 2, 7, 8}, {3, 2}, {2, 1}, {1, 0}, {2, 3}, false},
      {"ceil mode", {1, 2, 5, 5}, {2, 2}, {2, 2}, {0, 0}, {1, 1}, true},
      {"ceil mode with padding", {1, 1, 6, 7}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, true},
      {"VGG 2x2 stride 2", {2, 16, 32, 32}, {2, 2}, {2, 2}, {0, 0}, {1, 1}, false, true},
      {"2x2 stride 2 on odd sizes, 7x9", {1, 3, 7, 9}, {2, 2}, {2, 2}, {0, 0}, {1, 1}, false},
      {"3x3 stride 2 padding 1, 9x8", {2, 4, 9, 8}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, false},
      {"overlapping 3x2 stride 1, 6x7", {1, 3, 6, 7}, {3, 2}, {1, 1}, {0, 1}, {1, 1}, false},
      {"dilation 2, 9x10", {1, 2, 9, 10}, {3, 2}, {2, 1}, {1, 0}, {2, 3}, false},
      {"ceil mode, 5x7", {1, 2, 5, 7}, {2, 2}, {2, 2}, {0, 0}, {1, 1}, true},
      {"ceil mode with padding, batch 2", {2, 2, 6, 7}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, true},
  };
  return cases;
}

const std::vector<AdaptiveAvgPoolCase>& adaptive_avg_pool_cases() {
  static const std::vector<AdaptiveAvgPoolCase> cases = {
      {{1, 2, 4, 4}, {7, 7}}, {{2, 1, 7, 7}, {3, 3}},   {{1, 3, 5, 5}, {2, 2}},
      {{1, 1, 6, 9}, {4, 5}}, {{1, 2, 3, 5}, {3, 5}},   {{2, 2, 5, 3}, {1, 1}},
      {{2, 3, 4, 4}, {7, 7}}, {{2, 3, 7, 7}, {3, 3}},   {{1, 4, 5, 5}, {2, 2}},
      {{1, 2, 6, 9}, {4, 5}}, {{2, 8, 14, 14}, {7, 7}}, {{2, 8, 7, 7}, {7, 7}},
      {{2, 4, 5, 3}, {1, 1}},
  };
  return cases;
}

}  // namespace sonata::testing

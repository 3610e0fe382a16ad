#include "tests/cases/linalg_cases.h"

namespace sonata::testing {

const std::vector<MatmulCase>& matmul_cases() {
  static const std::vector<MatmulCase> cases = {
      {{4}, {4}, {}},                           // dot
      {{4}, {4, 3}, {3}},                       // vector-matrix
      {{3, 4}, {4}, {3}},                       // matrix-vector
      {{3, 4}, {4, 2}, {3, 2}},                 // matrix-matrix
      {{2, 3, 4}, {2, 4, 2}, {2, 3, 2}},        // batched
      {{2, 3, 4}, {4, 2}, {2, 3, 2}},           // batch against a matrix
      {{4}, {2, 4, 3}, {2, 3}},                 // vector against a batch
      {{2, 1, 3, 2}, {3, 2, 2}, {2, 3, 3, 2}},  // broadcast batch dims
      {{65, 48}, {48, 33}, {65, 33}},           // several CUDA tiles, odd edges
      {{3, 17, 40}, {40, 9}, {3, 17, 9}},       // a batch folded into the rows
  };
  return cases;
}

const std::vector<AddmmCase>& addmm_cases() {
  static const std::vector<AddmmCase> cases = {
      {{2}, 1.0, 1.0},     {{3, 2}, 1.0, 1.0}, {{2}, 0.5, -2.0},
      {{3, 2}, 3.0, 0.25}, {{3, 1}, 1.5, 0.5}, {{}, -1.0, 2.0},
  };
  return cases;
}

}  // namespace sonata::testing

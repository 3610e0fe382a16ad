#include "tests/cases/dropout_cases.h"

namespace sonata::testing {

const std::vector<DropoutCase>& dropout_cases() {
  static const std::vector<DropoutCase> cases = {
      {"1 element", {1}, 0.35},
      {"37 elements", {37}, 0.35},
      {"37 elements, p 0.4", {37}, 0.4},
      {"4096 elements", {4096}, 0.35, false, true},
      {"100003 elements", {100003}, 0.35, false, true},
      {"[3, 7], p 0.25", {3, 7}, 0.25},
      {"[3, 7], p 0.6", {3, 7}, 0.6},
      {"[64, 33]", {64, 33}, 0.2, false, true},
      {"[64, 33] sliced", {64, 33}, 0.5, true, true},
      {"[5, 7]", {5, 7}, 0.2},
      {"[5, 7] sliced", {5, 7}, 0.5, true},
      {"[2, 1024]", {2, 1024}, 0.2, false, true},
      {"[2, 1024] sliced", {2, 1024}, 0.5, true, true},
  };
  return cases;
}

}  // namespace sonata::testing

#include "tests/cases/ctc_cases.h"

namespace sonata::testing {

CtcOptions ctc_options(const CtcCase& c, Reduction reduction, bool zero_infinity) {
  CtcOptions options;
  options.blank = c.blank;
  options.reduction = reduction;
  options.zero_infinity = zero_infinity;
  return options;
}

CtcCase blank_zero_case() {
  return {5, 4, 0, {5, 4, 3, 1, 5, 0, 0, 2}, {{1, 2}, {1, 1}, {}, {3}, {3, 1, 3}, {}, {2}, {2, 2}}};
}

CtcCase blank_last_case() {
  return {6, 3, 2, {6, 6, 4, 2, 3}, {{0, 1, 0}, {1, 1, 1}, {0, 0}, {1}, {0, 0}}};
}

CtcCase ragged_case(int64_t blank) {
  const int64_t a = blank == 0 ? 1 : 0, b = blank == 0 ? 2 : 1, d = blank == 0 ? 3 : 2;
  return {6, 4, blank, {6, 4, 5, 3}, {{a, b, a}, {d}, {b, b}, {}}};
}

CtcCase small_batch_case(int64_t batch) {
  const std::vector<std::vector<int64_t>> labels{{1, 2, 2, 3, 4, 4}, {5, 5, 1}, {}, {6}};
  const std::vector<int64_t> lengths{40, 33, 17, 1};
  CtcCase c{40, 7, 0, {}, {}};
  for (int64_t n = 0; n < batch; ++n) {
    c.input_lengths.push_back(lengths[size_t(n)]);
    c.targets.push_back(labels[size_t(n)]);
  }
  return c;
}

const std::vector<NamedCtcCase>& ctc_cases() {
  static const std::vector<NamedCtcCase> cases{
      {"ragged, blank 0", ragged_case(0)},
      {"ragged, blank last", ragged_case(3)},
      {"repeats, empty targets, T_n 0 and 1",
       {12, 6, 0, {12, 9, 5, 1, 0}, {{1, 2, 2, 3}, {4, 4}, {}, {5}, {}}}},
      {"blank last, a repeat needing its blank", {10, 5, 4, {10, 7}, {{0, 1, 1, 3}, {2}}}},
      // Sample 1 needs 3 labels + 2 repeats = 5 frames and has 4.
      {"zero_infinity: one infeasible sample",
       {6, 4, 0, {6, 4, 6}, {{1, 2}, {1, 1, 1}, {3, 3}}},
       true},
  };
  return cases;
}

}  // namespace sonata::testing

#pragma once
// CTC's cases, written once: a batch as lists (targets per sample, lengths) turned into the
// tensors ctc_loss takes, the options each case runs with, and the table of ragged batches
// that the CPU float64 gradient checks (tests/ops/test_ctc.cpp) and the CUDA parity checks
// (tests/cuda/test_cuda_ctc.cpp) both iterate. The brute-force, fixture and long-utterance
// tests use the named cases below.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/ops/ctc.h"
#include "engine/tensor.h"

namespace sonata::testing {

struct CtcCase {
  int64_t frames = 1, classes = 2, blank = 0;  // T, C
  std::vector<int64_t> input_lengths;          // [N]
  std::vector<std::vector<int64_t>> targets;   // N label lists

  int64_t batch() const { return int64_t(input_lengths.size()); }
  int64_t max_target_length() const {
    int64_t longest = 0;
    for (const auto& target : targets) longest = std::max(longest, int64_t(target.size()));
    return longest;
  }
  // [N, S] padded with `pad` past each target (the loss must never read it).
  Tensor padded_targets(int64_t pad, int64_t extra_width = 1) const {
    const int64_t width = max_target_length() + extra_width;
    std::vector<int64_t> values(size_t(batch() * width), pad);
    for (int64_t n = 0; n < batch(); ++n)
      for (size_t j = 0; j < targets[size_t(n)].size(); ++j)
        values[size_t(n * width) + j] = targets[size_t(n)][j];
    return from_vector(values, {batch(), width});
  }
  Tensor concatenated_targets() const {
    std::vector<int64_t> values;
    for (const auto& target : targets) values.insert(values.end(), target.begin(), target.end());
    return from_vector(values, {int64_t(values.size())});
  }
  Tensor input_lengths_tensor() const { return from_vector(input_lengths, {batch()}); }
  Tensor target_lengths_tensor() const {
    std::vector<int64_t> lengths;
    for (const auto& target : targets) lengths.push_back(int64_t(target.size()));
    return from_vector(lengths, {batch()});
  }
};

// `c`'s blank with the given reduction.
CtcOptions ctc_options(const CtcCase& c, Reduction reduction, bool zero_infinity = false);

// Repeated labels ("aa" needs a blank between), empty targets, T_n = 1, T_n = 0, and
// infeasible samples; small enough (T <= 6, C <= 4) for the brute-force sum over paths.
CtcCase blank_zero_case();
CtcCase blank_last_case();
// A ragged batch for the gradient checks: repeats, an empty target, frames past T_n; `blank`
// 0 or the last class.
CtcCase ragged_case(int64_t blank);
// The first `batch` (1 to 4) of four samples: repeats, frames past T_n, an empty target,
// T_n = 1. Small batches take CUDA's launch shape with beta beside alpha.
CtcCase small_batch_case(int64_t batch);

// Every backend's table: each case under every reduction, in both target layouts, with
// zero_infinity where the case says so.
struct NamedCtcCase {
  std::string name;
  CtcCase batch;
  bool zero_infinity = false;  // the case holds an infeasible sample (L + repeats > T_n)
};
const std::vector<NamedCtcCase>& ctc_cases();

}  // namespace sonata::testing

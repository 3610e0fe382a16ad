#pragma once
// A CTC batch written as lists (targets per sample, lengths), turned into the tensors
// ctc_loss takes, shared by the CPU, fixture and CUDA tests.
#include <algorithm>
#include <cstdint>
#include <vector>

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

}  // namespace sonata::testing

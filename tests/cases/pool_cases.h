#pragma once
// The pooling ops' cases, written once: the CPU float64 gradient checks, the CPU value checks
// (float64 and float32 against loops by the definition) and the CUDA parity checks all iterate
// these tables (tests/ops/test_pool.cpp, tests/cuda/test_cuda_pool.cpp).
#include <array>
#include <string>
#include <vector>

#include "engine/tensor.h"

namespace sonata::testing {

struct MaxPoolCase {
  using Pair = std::array<int64_t, 2>;
  std::string name;
  Shape x;
  Pair kernel, stride, padding, dilation;
  bool ceil_mode;
  // A VGG-sized input for the CUDA launch paths; the gradient check nudges every input
  // element in turn, so it leaves these to the value and parity checks.
  bool large = false;
};

const std::vector<MaxPoolCase>& max_pool_cases();

struct AdaptiveAvgPoolCase {
  Shape x;
  std::array<int64_t, 2> out;
};

// Upsampling (output larger than input), even and uneven windows, and global pooling.
const std::vector<AdaptiveAvgPoolCase>& adaptive_avg_pool_cases();

}  // namespace sonata::testing

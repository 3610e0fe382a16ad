#pragma once
// softmax's and log_softmax's cases, written once: the CPU float64 gradient check, the CPU
// value check (float64 by hand, float32 against float64) and the CUDA parity check all
// iterate these tables (tests/ops/test_softmax.cpp, tests/cuda/test_cuda_ops.cpp).
#include <functional>
#include <string>
#include <vector>

#include "engine/tensor.h"

namespace sonata::testing {

struct SoftmaxCase {
  std::string name;
  std::function<Tensor(const Tensor&, int64_t dim)> fn;
};

// softmax and log_softmax.
const std::vector<SoftmaxCase>& softmax_cases();

// Every dim of a rank-3 input, the last and the first also counted from the end.
const std::vector<int64_t>& softmax_dims();

}  // namespace sonata::testing

#pragma once
// The view and copy ops' cases, written once: the CPU float64 gradient check, the CPU float32
// check and the CUDA parity check all iterate this table (tests/ops/test_shape.cpp,
// tests/cuda/test_cuda_shape_index.cpp).
#include <functional>
#include <string>
#include <vector>

#include "engine/tensor.h"

namespace sonata::testing {

struct ViewCase {
  std::string name;
  Shape input;
  std::function<Tensor(const Tensor&)> fn;
  // Large inputs reach the CUDA copy kernels' multi-block launch paths; the gradient check
  // nudges every input element in turn, so it leaves them to the cheaper checks.
  bool large = false;
};

const std::vector<ViewCase>& view_cases();

}  // namespace sonata::testing

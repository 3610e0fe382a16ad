#pragma once
// The elementwise ops' cases, written once: the CPU float64 gradient checks, the CPU value
// checks (float64 against the standard library, float32 against float64) and the CUDA parity
// checks all iterate these tables (tests/ops/test_elementwise.cpp, tests/cuda/test_cuda_ops.cpp).
#include <functional>
#include <string>
#include <vector>

#include "engine/tensor.h"

namespace sonata::testing {

struct BinaryCase {
  std::string name;
  std::function<Tensor(const Tensor&, const Tensor&)> fn;
  double (*truth)(double, double);
  // The right operand's input range: div keeps its denominator away from zero.
  double rhs_low = -1.0, rhs_high = 1.0;
};

const std::vector<BinaryCase>& binary_cases();

struct UnaryCase {
  std::string name;
  std::function<Tensor(const Tensor&)> fn;
  double (*truth)(double);
  double low, high;  // input range: positive for log/sqrt/pow, off the kinks otherwise
};

const std::vector<UnaryCase>& unary_cases();

// eq, ne, lt, le, gt, ge: bool results, no gradient.
struct ComparisonCase {
  std::string name;
  Tensor (*fn)(const Tensor&, const Tensor&);
};

const std::vector<ComparisonCase>& comparison_cases();

}  // namespace sonata::testing

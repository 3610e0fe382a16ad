#pragma once
// The reductions' cases, written once: the CPU float64 gradient check, the CPU value checks
// (float64 against hand loops, float32 against float64) and the CUDA parity check all iterate
// these tables (tests/ops/test_reduce.cpp, tests/cuda/test_cuda_ops.cpp).
#include <functional>
#include <string>
#include <vector>

#include "engine/tensor.h"

namespace sonata::testing {

// Which dims of a rank-3 input to reduce: one dim, a negative dim, adjacent dims,
// non-adjacent dims, unsorted dims, all dims (empty and listed).
struct ReduceDimsCase {
  std::string name;
  std::vector<int64_t> dims;
};

const std::vector<ReduceDimsCase>& reduce_dims_cases();

// A reduction over some dims, with or without keepdim: sum, mean, var (both corrections),
// amax.
struct ReductionCase {
  std::string name;
  std::function<Tensor(const Tensor&, const std::vector<int64_t>& dims, bool keepdim)> fn;
};

const std::vector<ReductionCase>& reduction_cases();

// sum_to targets for a [2, 3, 4] input: broadcast-compatible shapes of lower and equal rank.
const std::vector<Shape>& sum_to_targets();

}  // namespace sonata::testing

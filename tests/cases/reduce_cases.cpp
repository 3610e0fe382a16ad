#include "tests/cases/reduce_cases.h"

#include "engine/ops.h"

namespace sonata::testing {

const std::vector<ReduceDimsCase>& reduce_dims_cases() {
  static const std::vector<ReduceDimsCase> cases = {
      {"dim 1", {1}},
      {"dim -1", {-1}},
      {"dims 0 1", {0, 1}},
      {"dims 0 2", {0, 2}},
      {"dims 2 0 unsorted", {2, 0}},
      {"all dims", {}},
      {"all dims listed", {0, 1, 2}},
  };
  return cases;
}

const std::vector<ReductionCase>& reduction_cases() {
  using Dims = std::vector<int64_t>;
  static const std::vector<ReductionCase> cases = {
      {"sum",
       [](const Tensor& x, const Dims& dims, bool keepdim) { return sum(x, dims, keepdim); }},
      {"mean",
       [](const Tensor& x, const Dims& dims, bool keepdim) { return mean(x, dims, keepdim); }},
      {"var correction 0",
       [](const Tensor& x, const Dims& dims, bool keepdim) { return var(x, dims, 0, keepdim); }},
      {"var correction 1",
       [](const Tensor& x, const Dims& dims, bool keepdim) { return var(x, dims, 1, keepdim); }},
      // Random inputs have no ties, so the maximum is a smooth function locally.
      {"amax",
       [](const Tensor& x, const Dims& dims, bool keepdim) { return amax(x, dims, keepdim); }},
  };
  return cases;
}

const std::vector<Shape>& sum_to_targets() {
  static const std::vector<Shape> targets = {Shape{3, 1}, Shape{4}, Shape{1, 3, 1}, Shape{},
                                             Shape{2, 3, 4}};
  return targets;
}

}  // namespace sonata::testing

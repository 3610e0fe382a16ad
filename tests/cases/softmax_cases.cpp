#include "tests/cases/softmax_cases.h"

#include "engine/ops.h"

namespace sonata::testing {

const std::vector<SoftmaxCase>& softmax_cases() {
  static const std::vector<SoftmaxCase> cases = {
      {"softmax", [](const Tensor& x, int64_t dim) { return softmax(x, dim); }},
      {"log_softmax", [](const Tensor& x, int64_t dim) { return log_softmax(x, dim); }},
  };
  return cases;
}

const std::vector<int64_t>& softmax_dims() {
  static const std::vector<int64_t> dims = {0, 1, -1, 2, -3};
  return dims;
}

}  // namespace sonata::testing

#pragma once
// Shared helpers for the op tests: a gradient check that fails the test with the checker's
// report, and small constructors for literal tensors.
#include <catch2/catch.hpp>

#include <vector>

#include "engine/ops.h"
#include "engine/tensor.h"
#include "tests/support/grad_check.h"

namespace sonata::testing {

inline void require_gradients(const GradFunction& f, const std::vector<Tensor>& inputs,
                              const GradCheckOptions& options = {}) {
  const GradCheckResult result = check_gradients(f, inputs, options);
  INFO(result.report);
  INFO("worst scaled error " << result.worst_error << ", checked " << result.checked << ", skipped "
                             << result.skipped);
  REQUIRE(result.ok);
}

inline TensorOptions f64_options() {
  return TensorOptions{}.with(DType::f64);
}

// A float64 CPU tensor (no grad) from literal values.
inline Tensor f64_tensor(const std::vector<double>& values, const Shape& shape) {
  return from_vector(values, shape, f64_options());
}

inline Tensor i64_tensor(const std::vector<int64_t>& values, const Shape& shape) {
  return from_vector(values, shape);
}

// A float64 leaf requiring grad from literal values.
inline Tensor f64_leaf(const std::vector<double>& values, const Shape& shape) {
  Tensor t = f64_tensor(values, shape);
  t.set_requires_grad(true);
  return t;
}

inline std::vector<double> values_of(const Tensor& t) {
  return t.to_vector<double>();
}

// Row-major flat offset of a multi-index in a contiguous tensor of `shape`.
inline int64_t flat_index(const Shape& shape, const std::vector<int64_t>& index) {
  int64_t at = 0;
  for (size_t d = 0; d < shape.size(); ++d) at = at * shape[d] + index[d];
  return at;
}

}  // namespace sonata::testing

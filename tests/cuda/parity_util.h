#pragma once
// Shared helpers for the CUDA parity tests: inputs, and a check over every CUDA dtype that
// fails the test with the comparison's report.
#include <catch2/catch.hpp>

#include <vector>

#include "engine/ops.h"
#include "engine/random.h"
#include "tests/support/cuda_parity.h"

namespace sonata::testing {

inline constexpr DType kParityDTypes[] = {DType::f32, DType::f16, DType::bf16};

// A CPU f32 tensor uniform in [low, high), seeded; a leaf requiring grad unless `grad` is off.
inline Tensor parity_input(const Shape& shape, uint64_t seed, double low = -1.0, double high = 1.0,
                           bool grad = true) {
  Generator generator(seed, 5);
  Tensor t = add(mul(rand(shape, {}, &generator), high - low), low).detach();
  if (grad) t.set_requires_grad(true);
  return t;
}

inline Tensor index_input(const std::vector<int64_t>& values, const Shape& shape) {
  return from_vector(values, shape);
}

inline Tensor bool_input(const std::vector<double>& values, const Shape& shape) {
  return from_vector(values, shape, TensorOptions{}.with(DType::f64)).to(DType::boolean);
}

// Forward (and, where an input requires grad, backward) against the CPU for f32, f16, bf16.
inline void require_parity(const ParityFunction& f, const std::vector<Tensor>& inputs,
                           bool backward = true) {
  for (DType dtype : kParityDTypes) {
    INFO("dtype " << dtype_name(dtype));
    const ParityResult result = check_cuda_parity(f, inputs, dtype, backward);
    INFO(result.report);
    REQUIRE(result.ok);
  }
}

}  // namespace sonata::testing

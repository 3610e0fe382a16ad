#pragma once
// The matrix products' cases, written once: the CPU float64 gradient checks, the CPU value
// checks (float64 and float32 against a naive loop) and the CUDA parity checks all iterate
// these tables (tests/ops/test_linalg.cpp, tests/cuda/test_cuda_ops.cpp).
#include <vector>

#include "engine/tensor.h"

namespace sonata::testing {

// matmul(a, b) with the result's shape: every rank pairing torch's matmul defines.
struct MatmulCase {
  Shape a, b, out;
};

const std::vector<MatmulCase>& matmul_cases();

// addmm(bias, [3, 4], [4, 2], beta, alpha): the bias broadcast from every shape it may take.
struct AddmmCase {
  Shape bias;
  double beta, alpha;
};

const std::vector<AddmmCase>& addmm_cases();

}  // namespace sonata::testing

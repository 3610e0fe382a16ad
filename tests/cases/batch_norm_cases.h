#pragma once
// batch_norm's input shapes, written once: the CPU float64 gradient check, the CPU value check
// against hand-computed statistics and the CUDA parity check all iterate this table
// (tests/ops/test_batch_norm.cpp, tests/cuda/test_cuda_batch_norm.cpp).
#include <string>
#include <vector>

#include "engine/tensor.h"

namespace sonata::testing {

struct BatchNormCase {
  std::string name;
  Shape x;  // [N, C, ...]
  // Sizes for the CUDA kernels' packed, split and tiled paths; the gradient check nudges
  // every input element in turn, so it leaves these to the value and parity checks.
  bool large = false;
};

const std::vector<BatchNormCase>& batch_norm_cases();

// masked_batch_norm's: x [N, C, T, *] with each sample's valid frames along T
// (tests/ops/test_masked_batch_norm.cpp, tests/cuda/test_cuda_masked_batch_norm.cpp).
struct MaskedBatchNormCase {
  std::string name;
  Shape x;                       // [N, C, T, *]
  std::vector<int64_t> lengths;  // [N]
  bool large = false;            // as BatchNormCase's
};

const std::vector<MaskedBatchNormCase>& masked_batch_norm_cases();

}  // namespace sonata::testing

#pragma once
// dropout's cases, written once: the CPU mask check against Philox draws made by hand and the
// CPU float64 gradient check (tests/ops/test_dropout.cpp), and CUDA's same-mask check and
// parity check (tests/cuda/test_cuda_dropout.cpp) all iterate this table. The mask-frequency,
// repeated-state and identity tests stay by name.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/tensor.h"

namespace sonata::testing {

struct DropoutCase {
  std::string name;
  Shape shape;
  double p;
  // Drop x.slice(1, 1, end): a view one column into its storage (CUDA's unpacked path).
  bool sliced = false;
  // CUDA's launch sizes; the gradient check nudges every input element in turn (cost ~
  // numel^2), so it leaves these to the mask and parity checks; [5, 7] holds the sliced
  // gradient.
  bool large = false;

  Tensor input_of(const Tensor& x) const { return sliced ? x.slice(1, 1, x.size(1)) : x; }
};

// One element, sizes not a multiple of 4 (a partial last Philox block), whole blocks, odd
// 2-D sizes, and offset views.
const std::vector<DropoutCase>& dropout_cases();

}  // namespace sonata::testing

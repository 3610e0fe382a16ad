#pragma once
// conv2d's cases, written once: the CPU float64 gradient check, the CPU value check (float64
// and float32 against a direct convolution) and the CUDA parity checks (NCHW and channels
// last) all iterate this table (tests/ops/test_conv.cpp, tests/cuda/test_cuda_conv.cpp).
#include <string>
#include <vector>

#include "engine/ops/conv.h"

namespace sonata::testing {

struct ConvCase {
  std::string name;
  Shape x, weight;
  Conv2dParams params;
  bool bias;
  // The VGG19_BN and DeepSpeech2 sizes: thousands of inputs, each costing the gradient check
  // two whole convolutions, so it leaves these to the value and parity checks.
  bool large = false;
};

const std::vector<ConvCase>& conv_cases();

}  // namespace sonata::testing

#pragma once
// CUDA against the CPU reference. The function runs once on the CPU in float32 (on inputs
// first rounded to the CUDA dtype, so that input rounding is not counted as error) and once
// on CUDA in the dtype under test, TF32 off; outputs and input gradients must satisfy
// |cuda - cpu| <= atol + rtol * |cpu| elementwise, with the tolerances below, against the
// float32 run or, where that misses, against the same run in float64 (the exact answer:
// the float32 reference's own rounding is not CUDA's error).
#include <functional>
#include <string>
#include <vector>

#include "engine/tensor.h"

namespace sonata::testing {

struct Tolerance {
  double atol, rtol;
};
// The one place the per-dtype tolerances are written down.
Tolerance parity_tolerance(DType dtype);

using ParityFunction = std::function<Tensor(const std::vector<Tensor>&)>;

struct ParityResult {
  bool ok = true;
  std::string report;
};

// `inputs` are CPU f32 tensors; those with requires_grad get their gradients compared too
// (through L = sum(out * w), w fixed and random).
ParityResult check_cuda_parity(const ParityFunction& f, const std::vector<Tensor>& inputs,
                               DType dtype, bool backward = true);

// Elementwise comparison used by the parity check; exposed for kernels that are not ops.
ParityResult compare_tensors(const Tensor& actual, const Tensor& expected, Tolerance tolerance,
                             const std::string& what);

}  // namespace sonata::testing

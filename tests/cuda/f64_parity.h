#pragma once
// f64 on CUDA against f64 on the CPU: check_cuda_parity runs its CPU side in f32, too coarse
// for f64's 1e-10 tolerance, so digit-sensitive cases (huge equal logits, long sums) compare
// here, output and input gradients.
#include <catch2/catch.hpp>

#include <vector>

#include "engine/ops.h"
#include "engine/random.h"
#include "tests/support/cuda_parity.h"

namespace sonata::testing {

inline void require_f64_parity(const ParityFunction& f, const std::vector<Tensor>& inputs) {
  std::vector<Tensor> cpu_inputs, cuda_inputs;
  for (const Tensor& input : inputs) {
    const bool floating = is_floating(input.dtype());
    Tensor cpu = (floating ? input.detach().to(DType::f64) : input.detach()).contiguous();
    Tensor cuda = cpu.to(Device::cuda()).detach();
    if (input.requires_grad()) {
      cpu.set_requires_grad(true);
      cuda.set_requires_grad(true);
    }
    cpu_inputs.push_back(cpu);
    cuda_inputs.push_back(cuda);
  }
  const Tensor cpu_out = f(cpu_inputs), cuda_out = f(cuda_inputs);
  const Tolerance tolerance = parity_tolerance(DType::f64);
  ParityResult result = compare_tensors(cuda_out.to(Device::cpu()), cpu_out, tolerance, "output");
  if (cpu_out.requires_grad()) {
    Generator direction_rng(5, 3);
    const Tensor direction =
        rand(cpu_out.shape(), TensorOptions{}.with(DType::f64), &direction_rng);
    sum(mul(cpu_out, direction)).backward();
    sum(mul(cuda_out, direction.to(Device::cuda()))).backward();
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (!inputs[i].requires_grad()) continue;
      const ParityResult grad = compare_tensors(cuda_inputs[i].grad().to(Device::cpu()),
                                                cpu_inputs[i].grad(), tolerance, "grad");
      result.ok = result.ok && grad.ok;
      result.report += grad.report;
    }
  }
  INFO(result.report);
  REQUIRE(result.ok);
}

}  // namespace sonata::testing

#include "tests/support/cuda_parity.h"

#include <cmath>
#include <sstream>

#include "engine/ops.h"
#include "engine/random.h"

namespace sonata::testing {

Tolerance parity_tolerance(DType dtype) {
  switch (dtype) {
    case DType::f64:
      return {1e-10, 1e-10};
    case DType::f32:
      return {1e-5, 1e-4};
    case DType::f16:
      return {1e-2, 1e-2};  // 11-bit mantissa, fp32 accumulation
    case DType::bf16:
      return {5e-2, 5e-2};  // 8-bit mantissa
    default:
      return {0, 0};
  }
}

ParityResult compare_tensors(const Tensor& actual, const Tensor& expected, Tolerance tolerance,
                             const std::string& what) {
  ParityResult result;
  std::ostringstream report;
  if (actual.shape() != expected.shape()) {
    result.ok = false;
    report << what << ": shape " << shape_str(actual.shape()) << " vs reference "
           << shape_str(expected.shape()) << "\n";
    result.report = report.str();
    return result;
  }
  const std::vector<double> a = actual.to_vector<double>(), e = expected.to_vector<double>();
  int reported = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double bound = tolerance.atol + tolerance.rtol * std::abs(e[i]);
    const bool both_nan = std::isnan(a[i]) && std::isnan(e[i]);
    const bool same_inf = std::isinf(a[i]) && a[i] == e[i];
    if (both_nan || same_inf) continue;
    if (!(std::abs(a[i] - e[i]) <= bound)) {
      result.ok = false;
      if (reported++ < 8)
        report << what << "[" << i << "]: " << a[i] << " vs reference " << e[i] << "\n";
    }
  }
  result.report = report.str();
  return result;
}

ParityResult check_cuda_parity(const ParityFunction& f, const std::vector<Tensor>& inputs,
                               DType dtype, bool backward) {
  ParityResult result;
  std::vector<Tensor> cpu_inputs, cuda_inputs;
  for (const Tensor& input : inputs) {
    const bool floating = is_floating(input.dtype());
    // Round through the tested dtype so both sides start from the same values.
    Tensor rounded = floating ? input.detach().to(dtype).to(DType::f32) : input.detach();
    Tensor on_device = floating ? rounded.to(dtype).to(Device::cuda()) : rounded.to(Device::cuda());
    rounded = rounded.detach();
    on_device = on_device.detach();
    if (input.requires_grad()) {
      rounded.set_requires_grad(true);
      on_device.set_requires_grad(true);
    }
    cpu_inputs.push_back(rounded);
    cuda_inputs.push_back(on_device);
  }
  manual_seed(99);
  const Tensor cpu_out = f(cpu_inputs);
  manual_seed(99);
  const Tensor cuda_out = f(cuda_inputs);
  const Tolerance tolerance = parity_tolerance(dtype);
  auto merge = [&](const ParityResult& part) {
    result.ok = result.ok && part.ok;
    result.report += part.report;
  };
  merge(compare_tensors(cuda_out.to(Device::cpu()), cpu_out, tolerance, "output"));
  if (backward && cpu_out.requires_grad()) {
    Generator direction_rng(5, 3);
    const Tensor direction = rand(cpu_out.shape(), {}, &direction_rng);
    sum(mul(cpu_out.to(DType::f32), direction)).backward();
    sum(mul(cuda_out.to(DType::f32), direction.to(Device::cuda()))).backward();
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (!inputs[i].requires_grad()) continue;
      const std::string what = "grad of input " + std::to_string(i);
      const Tensor cuda_grad = cuda_inputs[i].grad(), cpu_grad = cpu_inputs[i].grad();
      // An input the function does not differentiate through (lstm_cell's h_prev without
      // lengths) gets no gradient on either device; on one alone it is a mismatch.
      if (!cuda_grad.defined() || !cpu_grad.defined()) {
        if (cuda_grad.defined() != cpu_grad.defined())
          merge({false,
                 what + ": defined on " + (cuda_grad.defined() ? "CUDA" : "the CPU") + " only\n"});
        continue;
      }
      merge(compare_tensors(cuda_grad.to(Device::cpu()), cpu_grad, tolerance, what));
    }
  }
  return result;
}

}  // namespace sonata::testing

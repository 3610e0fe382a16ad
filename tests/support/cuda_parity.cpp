#include "tests/support/cuda_parity.h"

#include <cmath>
#include <sstream>

#include "base/error.h"
#include "base/math_mode.h"
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

namespace {

// One run of f on `device` in `compute` (the floating inputs rounded through the tested
// dtype first), with the input gradients of L = sum(out * direction).
struct Run {
  Tensor out;
  std::vector<Tensor> grads;  // undefined where an input gets no gradient
};

Run run_on(const ParityFunction& f, const std::vector<Tensor>& inputs, DType dtype, DType compute,
           Device device, bool backward) {
  std::vector<Tensor> on_device;
  for (const Tensor& input : inputs) {
    const bool floating = is_floating(input.dtype());
    // A copy always (to() returns the tensor itself when nothing changes): f may update an
    // input in place (batch_norm's running stats), and every run starts from the same values.
    Tensor t = floating ? input.detach().to(dtype).to(compute).to(device).clone()
                        : input.detach().to(device).clone();
    t = t.detach();
    if (input.requires_grad()) t.set_requires_grad(true);
    on_device.push_back(t);
  }
  manual_seed(99);
  Run run;
  run.out = f(on_device);
  if (backward && run.out.requires_grad()) {
    Generator direction_rng(5, 3);
    // Rounded through the tested dtype, as the inputs are: the gradient reaching a half
    // kernel is then the same on both devices, and its rounding is not counted as error.
    const Tensor direction = rand(run.out.shape(), {}, &direction_rng).to(dtype).to(DType::f32);
    const DType sum_dtype = compute == DType::f64 ? DType::f64 : DType::f32;
    sum(mul(run.out.to(sum_dtype), direction.to(sum_dtype).to(device))).backward();
  }
  for (const Tensor& t : on_device)
    run.grads.push_back(t.requires_grad() && t.grad().defined() ? t.grad().to(Device::cpu())
                                                                : Tensor());
  run.out = run.out.detach().to(Device::cpu());
  return run;
}

ParityResult compare_runs(const Run& cuda, const Run& reference, const std::vector<Tensor>& inputs,
                          Tolerance tolerance) {
  ParityResult result;
  auto merge = [&](const ParityResult& part) {
    result.ok = result.ok && part.ok;
    result.report += part.report;
  };
  merge(compare_tensors(cuda.out, reference.out, tolerance, "output"));
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].requires_grad()) continue;
    const std::string what = "grad of input " + std::to_string(i);
    const Tensor& cuda_grad = cuda.grads[i];
    const Tensor& cpu_grad = reference.grads[i];
    // An input the function does not differentiate through (lstm_cell's h_prev without
    // lengths) gets no gradient on either device; on one alone it is a mismatch.
    if (!cuda_grad.defined() || !cpu_grad.defined()) {
      if (cuda_grad.defined() != cpu_grad.defined())
        merge({false,
               what + ": defined on " + (cuda_grad.defined() ? "CUDA" : "the CPU") + " only\n"});
      continue;
    }
    merge(compare_tensors(cuda_grad, cpu_grad, tolerance, what));
  }
  return result;
}

}  // namespace

ParityResult check_cuda_parity(const ParityFunction& f, const std::vector<Tensor>& inputs,
                               DType dtype, bool backward) {
  // f32 parity is fp32's rounding: TF32 (the convolutions' default, as PyTorch's) reads 10
  // mantissa bits and has its own tests (test_cuda_tf32.cpp), as PyTorch's tf32_on_and_off.
  const Tf32ModeGuard fp32_rounding(Tf32Mode::off);
  const Tolerance tolerance = parity_tolerance(dtype);
  const Run cuda = run_on(f, inputs, dtype, dtype, Device::cuda(), backward);
  const Run reference = run_on(f, inputs, dtype, DType::f32, Device::cpu(), backward);
  ParityResult result = compare_runs(cuda, reference, inputs, tolerance);
  if (result.ok) return result;
  // The f32 CPU reference has rounding error of its own: a gradient summed over 65536
  // cancelling terms can differ from CUDA's tree sum by 1e-4 relative with both right to
  // fp32's accuracy. The float64 CPU run is the exact answer to compare with then.
  Run exact;
  try {
    exact = run_on(f, inputs, dtype, DType::f64, Device::cpu(), backward);
  } catch (const Error& error) {
    result.report += std::string("(no float64 reference: ") + error.what() + ")\n";
    return result;
  }
  ParityResult against_exact = compare_runs(cuda, exact, inputs, tolerance);
  if (against_exact.ok) return against_exact;
  result.report += "against the float64 reference too:\n" + against_exact.report;
  return result;
}

}  // namespace sonata::testing

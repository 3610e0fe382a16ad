#include "tests/support/grad_check.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "base/error.h"
#include "engine/autograd/grad_mode.h"
#include "engine/ops.h"
#include "engine/random.h"

namespace sonata::testing {

Tensor grad_input(const Shape& shape, uint64_t seed, double low, double high) {
  Generator generator(seed, 7);
  Tensor t = rand(shape, TensorOptions{}.with(DType::f64), &generator);
  if (low != 0.0 || high != 1.0) t = add(mul(t, high - low), low);
  t = t.detach();
  t.set_requires_grad(true);
  return t;
}

GradCheckResult check_gradients(const GradFunction& f, const std::vector<Tensor>& inputs,
                                const GradCheckOptions& options) {
  GradCheckResult result;
  std::ostringstream report;
  for (const Tensor& input : inputs) {
    if (!input.defined() || !input.requires_grad()) continue;
    if (input.dtype() != DType::f64 || !input.device().is_cpu() || !input.is_contiguous())
      throw Error("check_gradients: inputs must be contiguous CPU float64 leaves");
  }

  // The projection direction, fixed for this check.
  manual_seed(options.seed);
  Tensor probe_out = f(inputs);
  Generator direction_rng(options.seed + 1, 11);
  const Tensor direction =
      rand(probe_out.shape(), TensorOptions{}.with(DType::f64), &direction_rng).detach();

  auto loss_value = [&]() {
    NoGradGuard no_grad;
    manual_seed(options.seed);
    const Tensor out = f(inputs);
    return sum(mul(out.to(DType::f64), direction)).item();
  };

  // Analytic gradients.
  for (const Tensor& input : inputs)
    if (input.defined() && input.requires_grad()) const_cast<Tensor&>(input).set_grad(Tensor());
  manual_seed(options.seed);
  const Tensor out = f(inputs);
  sum(mul(out.to(DType::f64), direction)).backward();

  const double centre = loss_value();
  int reported = 0;
  for (size_t which = 0; which < inputs.size(); ++which) {
    const Tensor& input = inputs[which];
    if (!input.defined() || !input.requires_grad()) continue;
    const Tensor analytic_tensor = input.grad();
    const std::vector<double> analytic = analytic_tensor.defined()
                                             ? analytic_tensor.to_vector<double>()
                                             : std::vector<double>(size_t(input.numel()), 0.0);
    double* values = input.data<double>();
    for (int64_t i = 0; i < input.numel(); ++i) {
      const double saved = values[i];
      values[i] = saved + options.eps;
      const double plus = loss_value();
      values[i] = saved - options.eps;
      const double minus = loss_value();
      values[i] = saved;

      const double numeric = (plus - minus) / (2 * options.eps);
      const double right = (plus - centre) / options.eps, left = (centre - minus) / options.eps;
      const double g = analytic[size_t(i)];
      const double scale = std::max({std::abs(g), std::abs(numeric), 1.0});
      if (std::abs(right - left) / scale > options.kink_tolerance) {
        ++result.skipped;
        continue;
      }
      ++result.checked;
      const double error = std::abs(g - numeric) / scale;
      result.worst_error = std::max(result.worst_error, error);
      if (!(error <= options.tolerance)) {
        result.ok = false;
        if (reported++ < 8)
          report << "input " << which << " element " << i << ": analytic " << g << ", numeric "
                 << numeric << " (scaled error " << error << ")\n";
      }
    }
  }
  const int64_t total = result.checked + result.skipped;
  if (total > 0 && result.skipped * 100 > total * options.max_skipped_percent) {
    result.ok = false;
    report << result.skipped << " of " << total << " elements sit on kinks; choose inputs away "
           << "from them\n";
  }
  if (result.checked == 0) {
    result.ok = false;
    report << "no element was checked\n";
  }
  result.report = report.str();
  return result;
}

}  // namespace sonata::testing

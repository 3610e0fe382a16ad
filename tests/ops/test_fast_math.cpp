// kernels/cpu/fast_math.h against double-precision libm over the float range: the relative
// error of exp, sigmoid and tanh stays within a few float ulp (FLT_EPSILON = 2^-23 is 1 ulp
// of 1), NaN stays NaN, and the clamped ends stay finite and ordered.
#include <catch2/catch.hpp>

#include <cfloat>
#include <cmath>
#include <limits>

#include "kernels/cpu/fast_math.h"

using namespace sonata::kernels::cpu;

namespace {

// Every float step of `step` in [low, high], and the worst relative error against `truth`.
template <typename Fast, typename Truth>
double worst_relative_error(float low, float high, float step, Fast fast, Truth truth) {
  double worst = 0;
  for (float x = low; x <= high; x += step) {
    const double want = truth(double(x));
    const double got = double(fast(x));
    const double error = std::abs(got - want) / std::max(std::abs(want), 1e-30);
    worst = std::max(worst, error);
  }
  return worst;
}

}  // namespace

TEST_CASE("exp_f32 is within 3 ulp of exp where the result is a normal float", "[fast_math]") {
  const double worst = worst_relative_error(-87.0f, 88.5f, 1.0f / 1024, exp_f32,
                                            [](double x) { return std::exp(x); });
  INFO("worst relative error " << worst);
  CHECK(worst <= 3 * FLT_EPSILON);
  CHECK(exp_f32(0.0f) == 1.0f);
  // Beyond the normal range the clamps hold: tiny stays positive, huge stays finite.
  CHECK(exp_f32(-200.0f) > 0.0f);
  CHECK(exp_f32(-200.0f) <= 1.2e-38f);
  CHECK(std::isfinite(exp_f32(200.0f)));
  CHECK(exp_f32(200.0f) >= 3.0e38f);
  CHECK(std::isnan(exp_f32(std::numeric_limits<float>::quiet_NaN())));
}

TEST_CASE("sigmoid_f32 and tanh_f32 are within a few ulp of libm, odd and saturating",
          "[fast_math]") {
  const double sigmoid_error = worst_relative_error(
      -80.0f, 80.0f, 1.0f / 512, sigmoid_f32, [](double x) { return 1.0 / (1.0 + std::exp(-x)); });
  INFO("sigmoid worst relative error " << sigmoid_error);
  CHECK(sigmoid_error <= 4 * FLT_EPSILON);
  // Near zero tanh(x) ~ x: relative error must hold there too (no cancellation).
  const double tanh_small = worst_relative_error(1e-6f, 0.7f, 1.0f / 65536, tanh_f32,
                                                 [](double x) { return std::tanh(x); });
  const double tanh_all = worst_relative_error(-20.0f, 20.0f, 1.0f / 512, tanh_f32,
                                               [](double x) { return std::tanh(x); });
  INFO("tanh worst relative error near 0: " << tanh_small << ", over [-20, 20]: " << tanh_all);
  CHECK(tanh_small <= 4 * FLT_EPSILON);
  CHECK(tanh_all <= 4 * FLT_EPSILON);
  CHECK(tanh_f32(0.0f) == 0.0f);
  CHECK(tanh_f32(-0.3f) == -tanh_f32(0.3f));
  CHECK(tanh_f32(100.0f) == 1.0f);
  CHECK(tanh_f32(-std::numeric_limits<float>::infinity()) == -1.0f);
  CHECK(sigmoid_f32(std::numeric_limits<float>::infinity()) == 1.0f);
  CHECK(sigmoid_f32(-std::numeric_limits<float>::infinity()) >= 0.0f);
  CHECK(sigmoid_f32(-std::numeric_limits<float>::infinity()) < 1e-38f);
  CHECK(std::isnan(tanh_f32(std::numeric_limits<float>::quiet_NaN())));
  CHECK(std::isnan(sigmoid_f32(std::numeric_limits<float>::quiet_NaN())));
}

TEST_CASE("exp_f64 and log_f64 are within 2 ulp of long-double libm, with IEEE ends",
          "[fast_math]") {
  const double ulp = std::numeric_limits<double>::epsilon();
  double worst_exp = 0, worst_log = 0;
  for (double x = -708.0; x <= 709.0; x += 0.0137) {
    const long double want = std::exp(static_cast<long double>(x));
    worst_exp = std::max(worst_exp, double(std::fabs((exp_f64(x) - want) / want)));
  }
  // log over many binades (its argument split) and densely around 1 (cancellation).
  for (double x = 1e-300; x < 1e300; x *= 1.37) {
    const long double want = std::log(static_cast<long double>(x));
    worst_log = std::max(worst_log, double(std::fabs((log_f64(x) - want) / want)));
  }
  double worst_near_one = 0;
  for (double x = 0.5; x <= 3.0; x += 1.0 / 4096) {
    if (x == 1.0) continue;
    const long double want = std::log(static_cast<long double>(x));
    worst_near_one = std::max(worst_near_one, double(std::fabs((log_f64(x) - want) / want)));
  }
  INFO("exp " << worst_exp / ulp << " ulp, log " << worst_log / ulp << " ulp, log near 1 "
              << worst_near_one / ulp << " ulp");
  CHECK(worst_exp <= 2 * ulp);
  CHECK(worst_log <= 2 * ulp);
  CHECK(worst_near_one <= 2 * ulp);
  const double inf = std::numeric_limits<double>::infinity();
  CHECK(exp_f64(0.0) == 1.0);
  CHECK(exp_f64(-inf) == 0.0);
  CHECK(exp_f64(-800.0) == 0.0);
  CHECK(exp_f64(inf) == inf);
  CHECK(exp_f64(710.0) == inf);
  CHECK(std::isfinite(exp_f64(709.7)));
  CHECK(std::isnan(exp_f64(std::numeric_limits<double>::quiet_NaN())));
  CHECK(log_f64(1.0) == 0.0);
  CHECK(log_f64(0.0) == -inf);
  CHECK(log_f64(inf) == inf);
  CHECK(std::isnan(log_f64(-1.0)));
  CHECK(std::isnan(log_f64(std::numeric_limits<double>::quiet_NaN())));
  // A denormal argument: log(2^-1070) = -1070 ln 2.
  CHECK(log_f64(std::ldexp(1.0, -1070)) == Approx(-1070 * std::log(2.0)).epsilon(1e-15));
}

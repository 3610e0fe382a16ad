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

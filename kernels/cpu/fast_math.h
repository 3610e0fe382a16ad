#pragma once
// exp, sigmoid and tanh of floats that GCC vectorises inside `omp simd` loops. glibc's expf
// and tanhf are scalar calls without -ffast-math (its vector variants are declared only
// then), and in an LSTM cell they took more time than the cell's arithmetic: tanhf (through
// expm1f) was 7 % of a DeepSpeech2 CPU step. Branch-free Cephes-style polynomials, within a
// few ulp of libm (tests/ops/test_fast_math.cpp measures it over the float range):
//   exp: x = n ln2 + r (Cody-Waite), e^r by a degree-7 polynomial, 2^n built in the
//        exponent bits; arguments are clamped to [-87.3, 88.72] so results stay normal
//        floats (exp(-100) gives 2^-126 instead of 3.7e-44, exp(inf) gives FLT_MAX-ish).
//   tanh: |x| < 0.625 by an odd polynomial (no cancellation near 0), else 1 - 2 / (e^2|x| + 1).
// NaN stays NaN. Inline by necessity: a call would stop the loop's vectorisation.
#include <cmath>
#include <cstdint>
#include <cstring>

namespace sonata::kernels::cpu {

inline float exp_f32(float x) {
  // Written so that a NaN passes (every comparison with it is false).
  x = x < -87.3365447f ? -87.3365447f : x;
  x = x > 88.72f ? 88.72f : x;
  const float n = std::floor(x * 1.44269504088896341f + 0.5f);
  // ln 2 in two parts, so that r = x - n ln2 is exact to float precision.
  const float r = (x - n * 0.693359375f) - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float e_r = p * r * r + r + 1.0f;
  // 2^n for n in [-126, 128): the biased exponent in bits 23..30. n = 128 (x near the top
  // of the range) is taken as 2 * 2^127.
  const int32_t k = int32_t(n);
  const int32_t top = k > 127 ? 1 : 0;
  const uint32_t bits = uint32_t(k - top + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof(scale));
  return e_r * scale * (top ? 2.0f : 1.0f);
}

inline float sigmoid_f32(float x) {
  return 1.0f / (1.0f + exp_f32(-x));
}

inline float tanh_f32(float x) {
  const float a = std::fabs(x);
  const float z = x * x;
  float p = -5.70498872745e-3f;
  p = p * z + 2.06390887954e-2f;
  p = p * z - 5.37397155531e-2f;
  p = p * z + 1.33314422036e-1f;
  p = p * z - 3.33332819422e-1f;
  const float small = p * z * a + a;
  const float large = 1.0f - 2.0f / (exp_f32(a + a) + 1.0f);
  return std::copysign(a < 0.625f ? small : large, x);
}

}  // namespace sonata::kernels::cpu

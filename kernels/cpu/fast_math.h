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
#include <limits>

namespace sonata::kernels::cpu {

inline float exp_f32(float x) {
  // A NaN fails every comparison: it takes the lower clamp (so that the integer conversion
  // below is defined) and is handed back at the end.
  const float c = x >= -87.3365447f ? (x <= 88.72f ? x : 88.72f) : -87.3365447f;
  const float n = std::floor(c * 1.44269504088896341f + 0.5f);
  // ln 2 in two parts, so that r = c - n ln2 is exact to float precision.
  const float r = (c - n * 0.693359375f) - n * -2.12194440e-4f;
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
  const float result = e_r * scale * (top ? 2.0f : 1.0f);
  return x == x ? result : x;
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

// Doubles (the CTC recursions' log-add-exp, 80 % of a CPU CTC step in glibc's exp and log):
// Cephes' exp (Pade (3,3) on |r| <= ln2 / 2) and log (x = m 2^e, m in [sqrt(1/2), sqrt(2)),
// log(m) = f - f^2/2 + f^3 P(f) / Q(f)), about 1 ulp; branch-free selects give exp's 0 below
// the normal range (its denormals are flushed) and inf above, log's -inf at 0, NaN below 0,
// inf at inf, and denormal arguments are rescaled first.
inline double exp_f64(double x) {
  // A NaN takes the lower clamp (a defined integer conversion) and is handed back at the end.
  const double clamped =
      x >= -708.3964185322641 ? (x <= 709.782712893384 ? x : 709.782712893384) : -708.3964185322641;
  const double n = std::floor(clamped * 1.4426950408889634074 + 0.5);
  const double r = (clamped - n * 6.93145751953125e-1) - n * 1.42860682030941723212e-6;
  const double rr = r * r;
  const double p = r * ((1.26177193074810590878e-4 * rr + 3.02994407707441961300e-2) * rr +
                        9.99999999999999999910e-1);
  const double q = ((3.00198505138664455042e-6 * rr + 2.52448340349684104192e-3) * rr +
                    2.27265548208155028766e-1) *
                       rr +
                   2.00000000000000000009e0;
  const double e_r = 1.0 + 2.0 * p / (q - p);
  // 2^n for n in [-1022, 1024): n = 1024 (the top of the range) is taken as 2 * 2^1023.
  // No double -> int64 conversion (a vector one needs AVX-512DQ, and without it the CTC
  // loops stayed scalar on AVX2): n + 1.5 * 2^52 holds n in its low mantissa bits, and
  // shifting (those bits + 1023) up by 52 keeps exactly the biased exponent.
  const bool top = n > 1023.0;
  const double shifted = (top ? n - 1.0 : n) + 6755399441055744.0;  // 1.5 * 2^52
  uint64_t bits;
  std::memcpy(&bits, &shifted, sizeof(bits));
  bits = (bits + 1023) << 52;
  double scale;
  std::memcpy(&scale, &bits, sizeof(scale));
  const double result = e_r * scale * (top ? 2.0 : 1.0);
  // Beyond the range: 0 below (where exp leaves the normal doubles), inf above.
  return x < -708.3964185322641 ? 0.0 : (x > 709.782712893384 ? HUGE_VAL : (x == x ? result : x));
}

// exp in the argument's own precision, for the loops that sum or normalise exponentials
// (softmax, log_softmax, cross entropy): float lanes are twice as many as double ones. Below
// the float range the result is 0, not exp_f32's clamp 2^-126: a probability that small
// times a loss's scale is a denormal, and a diverged classifier's gradient full of them made
// every layer beneath it compute on denormals (a VGG19_BN CPU step went from 2 s to 60 s).
inline float exp_or_zero(float x) {
  return x < -87.3365447f ? 0.0f : exp_f32(x);
}
inline double exp_or_zero(double x) {
  return exp_f64(x);
}

inline double log_f64(double x) {
  const bool tiny = x < 2.2250738585072014e-308;             // denormal (or 0, negative, below)
  const double scaled = tiny ? x * 18014398509481984.0 : x;  // 2^54
  uint64_t bits;
  std::memcpy(&bits, &scaled, sizeof(bits));
  // The exponent field as a double without an int64 -> double conversion (AVX-512DQ in a
  // vector): put it in the low mantissa bits of 2^52 and subtract 2^52.
  const uint64_t exponent_bits = 0x4330000000000000ull | ((bits >> 52) & 0x7ff);
  double exponent;
  std::memcpy(&exponent, &exponent_bits, sizeof(exponent));
  double e = (exponent - 4503599627370496.0) - 1022.0 - (tiny ? 54.0 : 0.0);  // 2^52
  const uint64_t mantissa_bits = (bits & 0x000fffffffffffffull) | 0x3fe0000000000000ull;
  double m;  // in [0.5, 1)
  std::memcpy(&m, &mantissa_bits, sizeof(m));
  const bool low = m < 0.70710678118654752440;
  e = low ? e - 1.0 : e;
  const double f = low ? m + m - 1.0 : m - 1.0;
  const double z = f * f;
  const double p = ((((1.01875663804580931796e-4 * f + 4.97494994976747001425e-1) * f +
                      4.70579119878881725854e0) *
                         f +
                     1.44989225341610930846e1) *
                        f +
                    1.79368678507819816313e1) *
                       f +
                   7.70838733755885391666e0;
  const double q = ((((f + 1.12873587189167450590e1) * f + 4.52279145837532221105e1) * f +
                     8.29875266912776603211e1) *
                        f +
                    7.11544750618563894466e1) *
                       f +
                   2.31251620126765340583e1;
  double y = f * (z * p / q);
  y -= e * 2.121944400546905827679e-4;
  y -= 0.5 * z;
  const double result = (f + y) + e * 0.693359375;
  return x > 0 ? (x <= 1.7976931348623157e308 ? result : x)  // inf stays inf
               : (x == 0 ? -HUGE_VAL : std::numeric_limits<double>::quiet_NaN());
}

}  // namespace sonata::kernels::cpu

#pragma once
// Host-side storage types for f16 and bf16. They share the bit layout of CUDA's __half and
// __nv_bfloat16, so a buffer written by one is read by the other. Arithmetic is done in
// float: these types only convert.
#include <cstdint>
#include <cstring>

#include "base/hd.h"

namespace sonata {

SONATA_HD uint32_t float_bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  return bits;
}
SONATA_HD float bits_float(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, 4);
  return value;
}

// IEEE binary16, round to nearest even, with subnormals, inf and NaN.
SONATA_HD uint16_t float_to_half_bits(float value) {
  const uint32_t bits = float_bits(value);
  const uint32_t sign = (bits >> 16) & 0x8000u;
  const uint32_t abs = bits & 0x7fffffffu;
  if (abs >= 0x7f800000u) return uint16_t(sign | (abs > 0x7f800000u ? 0x7e00u : 0x7c00u));
  if (abs >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // rounds past 65504: inf
  if (abs < 0x38800000u) {                                  // below 2^-14: subnormal half (or zero)
    // Adding 0.5 shifts the mantissa so that the FPU does the rounding for us.
    const float shifted = bits_float(abs) + 0.5f;
    return uint16_t(sign | (float_bits(shifted) - 0x3f000000u));
  }
  const uint32_t mantissa_odd = (abs >> 13) & 1u;
  const uint32_t rounded = abs + 0xc8000fffu + mantissa_odd;  // rebias exponent, round even
  return uint16_t(sign | (rounded >> 13));
}

SONATA_HD float half_bits_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu;
  const uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0x1f) return bits_float(sign | 0x7f800000u | (mantissa << 13));
  if (exponent == 0) {
    // Subnormal: value = mantissa * 2^-24, exact in float.
    const float magnitude = float(mantissa) * 5.9604644775390625e-8f;
    return sign ? -magnitude : magnitude;
  }
  return bits_float(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

// bfloat16: the top half of a float, rounded to nearest even; NaN stays NaN.
SONATA_HD uint16_t float_to_bf16_bits(float value) {
  const uint32_t bits = float_bits(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return uint16_t((bits >> 16) | 0x40u);
  const uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return uint16_t((bits + rounding) >> 16);
}
SONATA_HD float bf16_bits_to_float(uint16_t b) {
  return bits_float(uint32_t(b) << 16);
}

struct Half {
  uint16_t bits = 0;
  Half() = default;
  explicit Half(float value) : bits(float_to_half_bits(value)) {}
  explicit operator float() const { return half_bits_to_float(bits); }
};

struct BFloat16 {
  uint16_t bits = 0;
  BFloat16() = default;
  explicit BFloat16(float value) : bits(float_to_bf16_bits(value)) {}
  explicit operator float() const { return bf16_bits_to_float(bits); }
};

static_assert(sizeof(Half) == 2 && sizeof(BFloat16) == 2);

}  // namespace sonata

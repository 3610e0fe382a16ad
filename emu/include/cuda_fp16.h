#pragma once
// CUDA's __half for the emulator: IEEE binary16 storage with the toolkit's conversions
// (round to nearest even, subnormals, overflow to inf, NaN to the canonical 0x7fff) and the
// arithmetic operators cuda_fp16.hpp defines, which compute in float and round once.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "vector_types.h"

#ifndef __CUDA_FP16_TYPES_EXIST__
#define __CUDA_FP16_TYPES_EXIST__
#endif

namespace sonata::emu::fp16 {

inline uint32_t float_bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  return bits;
}
inline float bits_float(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, 4);
  return value;
}

// Round to nearest even; written from the IEEE definition (exponent rebias, guard and
// sticky bits), not from base/half.h, which the emulator sits below.
inline uint16_t float_to_half_rn(float value) {
  const uint32_t bits = float_bits(value);
  const uint32_t sign = (bits >> 16) & 0x8000u;
  const uint32_t abs = bits & 0x7fffffffu;
  if (abs > 0x7f800000u) return 0x7fffu;                    // NaN: CUDA's canonical NaN
  if (abs == 0x7f800000u) return uint16_t(sign | 0x7c00u);  // inf
  const int exponent = int(abs >> 23) - 127;
  if (exponent > 15) return uint16_t(sign | 0x7c00u);  // too large even before rounding
  uint32_t mantissa = (abs & 0x7fffffu) | (abs >= 0x00800000u ? 0x800000u : 0u);
  // Value = mantissa * 2^(e - 23) with e the unbiased exponent (denormal floats: e = -126).
  const int e = abs >= 0x00800000u ? exponent : -126;
  // Target: half mantissa units of 2^-24 for subnormals, 2^(e-10) for normals.
  const int unit = e < -14 ? -24 : e - 10;
  const int shift = unit - (e - 23);  // bits dropped from `mantissa`
  uint32_t result;
  if (shift >= 32) {
    result = 0;
  } else {
    const uint32_t kept = mantissa >> shift;
    const uint32_t dropped = mantissa & ((1u << shift) - 1u);
    const uint32_t half_way = 1u << (shift - 1);
    result = kept;
    if (dropped > half_way || (dropped == half_way && (kept & 1u))) ++result;
  }
  // `result` is the significand in units of 2^unit; rebuild the half's fields. A carry
  // out of the mantissa moves to the next exponent, which the addition handles.
  uint32_t h;
  if (unit == -24) {
    h = result;  // subnormal (or rounds up into the smallest normal: 0x400)
  } else {
    h = (uint32_t(e + 15) << 10) + (result - 0x400u);
  }
  if (h >= 0x7c00u) h = 0x7c00u;  // rounded past 65504
  return uint16_t(sign | h);
}

inline float half_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu;
  const uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0x1f) return bits_float(sign | 0x7f800000u | (mantissa << 13));
  if (exponent == 0) {
    const float magnitude = float(mantissa) * 5.9604644775390625e-8f;  // exact: m * 2^-24
    return sign ? -magnitude : magnitude;
  }
  return bits_float(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

// Rounds `value` once to a binary format of `digits` significand bits whose smallest step
// (a subnormal's) is 2^min_step: ties to even, past `max_finite` infinity. The result is a
// float holding the rounded value exactly (NaN stays NaN), which the format's own float
// conversion then takes without rounding again. CUDA's __double2half / __double2bfloat16
// round the double once ("round-to-nearest-even mode"); through float first a double just
// above a tie would be rounded twice and land on the even neighbour below.
inline float round_once(double value, int digits, int min_step, double max_finite) {
  if (std::isnan(value)) return float(value);
  const double magnitude = std::fabs(value);
  int exponent = 0;
  std::frexp(magnitude, &exponent);  // magnitude = f * 2^exponent, f in [0.5, 1)
  const int step = std::max(exponent - digits, min_step);
  const double rounded = std::ldexp(std::nearbyint(std::ldexp(magnitude, -step)), step);
  const float result = rounded > max_finite ? INFINITY : float(rounded);
  return std::signbit(value) ? -result : result;
}

// a * b + c rounded to odd at double precision: exact when it fits in a double, else the
// neighbour whose last bit is odd. a * b must be exact in a double (two half or bfloat16
// values: 22 or 16 significand bits). Rounding that once more to a format of at most 51
// bits gives the correctly rounded fused result (round-to-odd, Boldo and Melquiond), which
// a plain double sum does not when c is tiny beside a product at a tie.
inline double fma_round_to_odd(double a, double b, double c) {
  const double product = a * b;  // exact
  const double sum = product + c;
  if (!std::isfinite(sum)) return sum;
  // TwoSum: the exact error of the rounded sum.
  const double product_part = sum - c;
  const double error = (product - product_part) + (c - (sum - product_part));
  if (error == 0) return sum;
  uint64_t bits;
  std::memcpy(&bits, &sum, 8);
  if (bits & 1u) return sum;
  return std::nextafter(sum, error > 0 ? INFINITY : -INFINITY);
}

}  // namespace sonata::emu::fp16

struct __half_raw {
  unsigned short x;
};
struct __half2_raw {
  unsigned short x, y;
};

struct alignas(2) __half {
 protected:
  unsigned short __x;

 public:
  __half() = default;
  constexpr __half(const __half_raw& raw) : __x(raw.x) {}
  __half(float value) : __x(sonata::emu::fp16::float_to_half_rn(value)) {}
  __half(double value) : __half(sonata::emu::fp16::round_once(value, 11, -24, 65504.0)) {}
  __half(int value) : __half(float(value)) {}
  __half(unsigned value) : __half(float(value)) {}
  __half(long long value) : __half(float(value)) {}
  __half(unsigned long long value) : __half(float(value)) {}
  __half(short value) : __half(float(value)) {}
  __half(unsigned short value) : __half(float(value)) {}
  __half& operator=(const __half_raw& raw) {
    __x = raw.x;
    return *this;
  }
  operator __half_raw() const { return __half_raw{__x}; }
  operator float() const { return sonata::emu::fp16::half_to_float(__x); }
  explicit operator bool() const { return (__x & 0x7fffu) != 0; }
};

struct alignas(4) __half2 {
  __half x, y;
  __half2() = default;
  constexpr __half2(const __half& a, const __half& b) : x(a), y(b) {}
  __half2(const __half2_raw& raw) : x(__half_raw{raw.x}), y(__half_raw{raw.y}) {}
};

static_assert(sizeof(__half) == 2 && sizeof(__half2) == 4);

inline __half __float2half_rn(float value) {
  return __half(value);
}
inline __half __float2half(float value) {
  return __half(value);
}
// "Converts double number to half precision in round-to-nearest-even mode": one rounding.
inline __half __double2half(double value) {
  return __half(sonata::emu::fp16::round_once(value, 11, -24, 65504.0));
}
inline float __half2float(__half value) {
  return float(value);
}
inline float __low2float(__half2 value) {
  return float(value.x);
}
inline float __high2float(__half2 value) {
  return float(value.y);
}
inline __half2 __float2half2_rn(float value) {
  return __half2(__half(value), __half(value));
}
inline __half2 __floats2half2_rn(float a, float b) {
  return __half2(__half(a), __half(b));
}
inline __half2 __halves2half2(__half a, __half b) {
  return __half2(a, b);
}
inline __half __low2half(__half2 value) {
  return value.x;
}
inline __half __high2half(__half2 value) {
  return value.y;
}
inline float2 __half22float2(__half2 value) {
  return float2{float(value.x), float(value.y)};
}
inline unsigned short __half_as_ushort(__half value) {
  return __half_raw(value).x;
}
inline short __half_as_short(__half value) {
  return short(__half_raw(value).x);
}
inline __half __ushort_as_half(unsigned short bits) {
  return __half(__half_raw{bits});
}
inline __half __short_as_half(short bits) {
  return __half(__half_raw{(unsigned short)bits});
}
inline bool __hisnan(__half value) {
  return (__half_raw(value).x & 0x7fffu) > 0x7c00u;
}
inline int __hisinf(__half value) {
  const unsigned short bits = __half_raw(value).x;
  return bits == 0x7c00u ? 1 : bits == 0xfc00u ? -1 : 0;
}

// Arithmetic: float, rounded once to half (cuda_fp16.hpp's host path does the same).
inline __half __hadd(__half a, __half b) {
  return __half(float(a) + float(b));
}
inline __half __hsub(__half a, __half b) {
  return __half(float(a) - float(b));
}
inline __half __hmul(__half a, __half b) {
  return __half(float(a) * float(b));
}
inline __half __hdiv(__half a, __half b) {
  return __half(float(a) / float(b));
}
inline __half __hneg(__half a) {
  return __ushort_as_half(__half_as_ushort(a) ^ 0x8000u);
}
inline __half __habs(__half a) {
  return __ushort_as_half(__half_as_ushort(a) & 0x7fffu);
}
// "Performs half fused multiply-add in round-to-nearest-even mode": a * b + c rounded once.
inline __half __hfma(__half a, __half b, __half c) {
  return __half(sonata::emu::fp16::round_once(
      sonata::emu::fp16::fma_round_to_odd(float(a), float(b), float(c)), 11, -24, 65504.0));
}
inline bool __heq(__half a, __half b) {
  return float(a) == float(b);
}
inline bool __hne(__half a, __half b) {
  return float(a) != float(b);
}
inline bool __hlt(__half a, __half b) {
  return float(a) < float(b);
}
inline bool __hle(__half a, __half b) {
  return float(a) <= float(b);
}
inline bool __hgt(__half a, __half b) {
  return float(a) > float(b);
}
inline bool __hge(__half a, __half b) {
  return float(a) >= float(b);
}
// CUDA's math API: "If either of inputs is NaN, the other input is returned. If both inputs
// are NaNs, then canonical NaN is returned. If values of both inputs are 0.0, then
// +0.0 > -0.0" (for __hmin: -0.0 < +0.0).
inline __half __hmax(__half a, __half b) {
  if (__hisnan(a) && __hisnan(b)) return __ushort_as_half(0x7fffu);
  if (__hisnan(a)) return b;
  if (__hisnan(b)) return a;
  if (float(a) == float(b)) return (__half_as_ushort(a) & 0x8000u) ? b : a;  // +0 over -0
  return float(a) < float(b) ? b : a;
}
inline __half __hmin(__half a, __half b) {
  if (__hisnan(a) && __hisnan(b)) return __ushort_as_half(0x7fffu);
  if (__hisnan(a)) return b;
  if (__hisnan(b)) return a;
  if (float(a) == float(b)) return (__half_as_ushort(a) & 0x8000u) ? a : b;  // -0 under +0
  return float(b) < float(a) ? b : a;
}

inline __half operator+(const __half& a, const __half& b) {
  return __hadd(a, b);
}
inline __half operator-(const __half& a, const __half& b) {
  return __hsub(a, b);
}
inline __half operator*(const __half& a, const __half& b) {
  return __hmul(a, b);
}
inline __half operator/(const __half& a, const __half& b) {
  return __hdiv(a, b);
}
inline __half operator-(const __half& a) {
  return __hneg(a);
}
inline __half operator+(const __half& a) {
  return a;
}
inline __half& operator+=(__half& a, const __half& b) {
  return a = a + b;
}
inline __half& operator-=(__half& a, const __half& b) {
  return a = a - b;
}
inline __half& operator*=(__half& a, const __half& b) {
  return a = a * b;
}
inline __half& operator/=(__half& a, const __half& b) {
  return a = a / b;
}
inline bool operator==(const __half& a, const __half& b) {
  return __heq(a, b);
}
inline bool operator!=(const __half& a, const __half& b) {
  return __hne(a, b);
}
inline bool operator<(const __half& a, const __half& b) {
  return __hlt(a, b);
}
inline bool operator<=(const __half& a, const __half& b) {
  return __hle(a, b);
}
inline bool operator>(const __half& a, const __half& b) {
  return __hgt(a, b);
}
inline bool operator>=(const __half& a, const __half& b) {
  return __hge(a, b);
}

// atomicAdd on __half (sm_70+/sm_80+): a 16-bit compare-and-swap loop, rounding the float
// sum once, as the card does. Under the kernel flags each __atomic builtin is a checked
// atomic access.
inline __half atomicAdd(__half* address, __half value) {
  unsigned short* bits = reinterpret_cast<unsigned short*>(address);
  unsigned short old = __atomic_load_n(bits, __ATOMIC_RELAXED);
  for (;;) {
    const __half current = __ushort_as_half(old);
    const unsigned short desired = __half_as_ushort(__half(float(current) + float(value)));
    if (__atomic_compare_exchange_n(bits, &old, desired, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
      return current;
  }
}

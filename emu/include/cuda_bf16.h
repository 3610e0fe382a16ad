#pragma once
// CUDA's __nv_bfloat16 for the emulator: the top 16 bits of a float, with the toolkit's
// conversions (round to nearest even, NaN to the canonical 0x7fff) and the arithmetic
// operators cuda_bf16.hpp defines, which compute in float and round once.
#include <cstdint>

#include "cuda_fp16.h"

#ifndef __CUDA_BF16_TYPES_EXIST__
#define __CUDA_BF16_TYPES_EXIST__
#endif

namespace sonata::emu::bf16 {

// The top half of a float, rounded to nearest even; NaN becomes CUDA's canonical 0x7fff.
inline uint16_t float_to_bf16_rn(float value) {
  const uint32_t bits = fp16::float_bits(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return 0x7fffu;
  const uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return uint16_t((bits + rounding) >> 16);
}
inline float bf16_to_float(uint16_t bits) {
  return fp16::bits_float(uint32_t(bits) << 16);
}

// The largest finite bfloat16, (2 - 2^-7) * 2^127.
constexpr double kMaxFinite = 0x1.fep127;

}  // namespace sonata::emu::bf16

struct __nv_bfloat16_raw {
  unsigned short x;
};
struct __nv_bfloat162_raw {
  unsigned short x, y;
};

struct alignas(2) __nv_bfloat16 {
 protected:
  unsigned short __x;

 public:
  __nv_bfloat16() = default;
  constexpr __nv_bfloat16(const __nv_bfloat16_raw& raw) : __x(raw.x) {}
  __nv_bfloat16(float value) : __x(sonata::emu::bf16::float_to_bf16_rn(value)) {}
  __nv_bfloat16(double value)
      : __nv_bfloat16(
            sonata::emu::fp16::round_once(value, 8, -133, sonata::emu::bf16::kMaxFinite)) {}
  __nv_bfloat16(int value) : __nv_bfloat16(float(value)) {}
  __nv_bfloat16(unsigned value) : __nv_bfloat16(float(value)) {}
  __nv_bfloat16(long long value) : __nv_bfloat16(float(value)) {}
  __nv_bfloat16(unsigned long long value) : __nv_bfloat16(float(value)) {}
  __nv_bfloat16(short value) : __nv_bfloat16(float(value)) {}
  __nv_bfloat16(unsigned short value) : __nv_bfloat16(float(value)) {}
  __nv_bfloat16& operator=(const __nv_bfloat16_raw& raw) {
    __x = raw.x;
    return *this;
  }
  operator __nv_bfloat16_raw() const { return __nv_bfloat16_raw{__x}; }
  operator float() const { return sonata::emu::bf16::bf16_to_float(__x); }
  explicit operator bool() const { return (__x & 0x7fffu) != 0; }
};

struct alignas(4) __nv_bfloat162 {
  __nv_bfloat16 x, y;
  __nv_bfloat162() = default;
  constexpr __nv_bfloat162(const __nv_bfloat16& a, const __nv_bfloat16& b) : x(a), y(b) {}
  __nv_bfloat162(const __nv_bfloat162_raw& raw)
      : x(__nv_bfloat16_raw{raw.x}), y(__nv_bfloat16_raw{raw.y}) {}
};

static_assert(sizeof(__nv_bfloat16) == 2 && sizeof(__nv_bfloat162) == 4);

inline __nv_bfloat16 __float2bfloat16_rn(float value) {
  return __nv_bfloat16(value);
}
inline __nv_bfloat16 __float2bfloat16(float value) {
  return __nv_bfloat16(value);
}
// "Converts double number to nv_bfloat16 precision in round-to-nearest-even mode": once.
inline __nv_bfloat16 __double2bfloat16(double value) {
  return __nv_bfloat16(value);
}
inline float __bfloat162float(__nv_bfloat16 value) {
  return float(value);
}
inline float __low2float(__nv_bfloat162 value) {
  return float(value.x);
}
inline float __high2float(__nv_bfloat162 value) {
  return float(value.y);
}
inline __nv_bfloat162 __float2bfloat162_rn(float value) {
  return __nv_bfloat162(__nv_bfloat16(value), __nv_bfloat16(value));
}
inline __nv_bfloat162 __floats2bfloat162_rn(float a, float b) {
  return __nv_bfloat162(__nv_bfloat16(a), __nv_bfloat16(b));
}
inline __nv_bfloat162 __halves2half2(__nv_bfloat16 a, __nv_bfloat16 b) {
  return __nv_bfloat162(a, b);
}
inline __nv_bfloat16 __low2half(__nv_bfloat162 value) {
  return value.x;
}
inline __nv_bfloat16 __high2half(__nv_bfloat162 value) {
  return value.y;
}
inline float2 __bfloat1622float2(__nv_bfloat162 value) {
  return float2{float(value.x), float(value.y)};
}
inline unsigned short __bfloat16_as_ushort(__nv_bfloat16 value) {
  return __nv_bfloat16_raw(value).x;
}
inline short __bfloat16_as_short(__nv_bfloat16 value) {
  return short(__nv_bfloat16_raw(value).x);
}
inline __nv_bfloat16 __ushort_as_bfloat16(unsigned short bits) {
  return __nv_bfloat16(__nv_bfloat16_raw{bits});
}
inline __nv_bfloat16 __short_as_bfloat16(short bits) {
  return __nv_bfloat16(__nv_bfloat16_raw{(unsigned short)bits});
}
inline bool __hisnan(__nv_bfloat16 value) {
  return (__nv_bfloat16_raw(value).x & 0x7fffu) > 0x7f80u;
}
inline int __hisinf(__nv_bfloat16 value) {
  const unsigned short bits = __nv_bfloat16_raw(value).x;
  return bits == 0x7f80u ? 1 : bits == 0xff80u ? -1 : 0;
}

// Arithmetic: float, rounded once to half (cuda_bf16.hpp's host path does the same).
inline __nv_bfloat16 __hadd(__nv_bfloat16 a, __nv_bfloat16 b) {
  return __nv_bfloat16(float(a) + float(b));
}
inline __nv_bfloat16 __hsub(__nv_bfloat16 a, __nv_bfloat16 b) {
  return __nv_bfloat16(float(a) - float(b));
}
inline __nv_bfloat16 __hmul(__nv_bfloat16 a, __nv_bfloat16 b) {
  return __nv_bfloat16(float(a) * float(b));
}
inline __nv_bfloat16 __hdiv(__nv_bfloat16 a, __nv_bfloat16 b) {
  return __nv_bfloat16(float(a) / float(b));
}
inline __nv_bfloat16 __hneg(__nv_bfloat16 a) {
  return __ushort_as_bfloat16(__bfloat16_as_ushort(a) ^ 0x8000u);
}
inline __nv_bfloat16 __habs(__nv_bfloat16 a) {
  return __ushort_as_bfloat16(__bfloat16_as_ushort(a) & 0x7fffu);
}
// "Performs nv_bfloat16 fused multiply-add in round-to-nearest-even mode": rounded once.
inline __nv_bfloat16 __hfma(__nv_bfloat16 a, __nv_bfloat16 b, __nv_bfloat16 c) {
  return __nv_bfloat16(sonata::emu::fp16::fma_round_to_odd(float(a), float(b), float(c)));
}
inline bool __heq(__nv_bfloat16 a, __nv_bfloat16 b) {
  return float(a) == float(b);
}
inline bool __hne(__nv_bfloat16 a, __nv_bfloat16 b) {
  return float(a) != float(b);
}
inline bool __hlt(__nv_bfloat16 a, __nv_bfloat16 b) {
  return float(a) < float(b);
}
inline bool __hle(__nv_bfloat16 a, __nv_bfloat16 b) {
  return float(a) <= float(b);
}
inline bool __hgt(__nv_bfloat16 a, __nv_bfloat16 b) {
  return float(a) > float(b);
}
inline bool __hge(__nv_bfloat16 a, __nv_bfloat16 b) {
  return float(a) >= float(b);
}
// As __half's: the other input for one NaN, canonical NaN for two, +0.0 > -0.0.
inline __nv_bfloat16 __hmax(__nv_bfloat16 a, __nv_bfloat16 b) {
  if (__hisnan(a) && __hisnan(b)) return __ushort_as_bfloat16(0x7fffu);
  if (__hisnan(a)) return b;
  if (__hisnan(b)) return a;
  if (float(a) == float(b)) return (__bfloat16_as_ushort(a) & 0x8000u) ? b : a;
  return float(a) < float(b) ? b : a;
}
inline __nv_bfloat16 __hmin(__nv_bfloat16 a, __nv_bfloat16 b) {
  if (__hisnan(a) && __hisnan(b)) return __ushort_as_bfloat16(0x7fffu);
  if (__hisnan(a)) return b;
  if (__hisnan(b)) return a;
  if (float(a) == float(b)) return (__bfloat16_as_ushort(a) & 0x8000u) ? a : b;
  return float(b) < float(a) ? b : a;
}

inline __nv_bfloat16 operator+(const __nv_bfloat16& a, const __nv_bfloat16& b) {
  return __hadd(a, b);
}
inline __nv_bfloat16 operator-(const __nv_bfloat16& a, const __nv_bfloat16& b) {
  return __hsub(a, b);
}
inline __nv_bfloat16 operator*(const __nv_bfloat16& a, const __nv_bfloat16& b) {
  return __hmul(a, b);
}
inline __nv_bfloat16 operator/(const __nv_bfloat16& a, const __nv_bfloat16& b) {
  return __hdiv(a, b);
}
inline __nv_bfloat16 operator-(const __nv_bfloat16& a) {
  return __hneg(a);
}
inline __nv_bfloat16 operator+(const __nv_bfloat16& a) {
  return a;
}
inline __nv_bfloat16& operator+=(__nv_bfloat16& a, const __nv_bfloat16& b) {
  return a = a + b;
}
inline __nv_bfloat16& operator-=(__nv_bfloat16& a, const __nv_bfloat16& b) {
  return a = a - b;
}
inline __nv_bfloat16& operator*=(__nv_bfloat16& a, const __nv_bfloat16& b) {
  return a = a * b;
}
inline __nv_bfloat16& operator/=(__nv_bfloat16& a, const __nv_bfloat16& b) {
  return a = a / b;
}
inline bool operator==(const __nv_bfloat16& a, const __nv_bfloat16& b) {
  return __heq(a, b);
}
inline bool operator!=(const __nv_bfloat16& a, const __nv_bfloat16& b) {
  return __hne(a, b);
}
inline bool operator<(const __nv_bfloat16& a, const __nv_bfloat16& b) {
  return __hlt(a, b);
}
inline bool operator<=(const __nv_bfloat16& a, const __nv_bfloat16& b) {
  return __hle(a, b);
}
inline bool operator>(const __nv_bfloat16& a, const __nv_bfloat16& b) {
  return __hgt(a, b);
}
inline bool operator>=(const __nv_bfloat16& a, const __nv_bfloat16& b) {
  return __hge(a, b);
}

// atomicAdd on __nv_bfloat16 (sm_70+/sm_80+): a 16-bit compare-and-swap loop, rounding the float
// sum once, as the card does. Under the kernel flags each __atomic builtin is a checked
// atomic access.
inline __nv_bfloat16 atomicAdd(__nv_bfloat16* address, __nv_bfloat16 value) {
  unsigned short* bits = reinterpret_cast<unsigned short*>(address);
  unsigned short old = __atomic_load_n(bits, __ATOMIC_RELAXED);
  for (;;) {
    const __nv_bfloat16 current = __ushort_as_bfloat16(old);
    const unsigned short desired =
        __bfloat16_as_ushort(__nv_bfloat16(float(current) + float(value)));
    if (__atomic_compare_exchange_n(bits, &old, desired, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
      return current;
  }
}

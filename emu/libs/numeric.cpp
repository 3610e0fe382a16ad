#include "emu/libs/numeric.h"

#include <cmath>
#include <cstring>

namespace sonata::emu {

float half_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h >> 15) << 31;
  const int exponent = (h >> 10) & 0x1f;
  const uint32_t mantissa = h & 0x3ff;
  float magnitude;
  if (exponent == 0)
    magnitude = std::ldexp(float(mantissa), -24);  // zero and subnormals
  else if (exponent == 31)
    magnitude = mantissa ? NAN : INFINITY;
  else
    magnitude = std::ldexp(float(mantissa | 0x400), exponent - 25);
  uint32_t bits;
  std::memcpy(&bits, &magnitude, 4);
  bits |= sign;
  float out;
  std::memcpy(&out, &bits, 4);
  return out;
}

uint16_t float_to_half(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  const uint16_t sign = uint16_t((bits >> 16) & 0x8000);
  const float magnitude = std::fabs(value);
  if (std::isnan(value)) return uint16_t(sign | 0x7e00);
  if (magnitude >= 65520.0f) return uint16_t(sign | 0x7c00);  // rounds to infinity
  if (magnitude < std::ldexp(1.0f, -14)) {
    // Subnormal: a multiple of 2^-24, rounded to nearest even by rint's default mode.
    const float units = std::nearbyint(magnitude * std::ldexp(1.0f, 24));
    return uint16_t(sign | uint16_t(units));
  }
  int exponent = 0;
  const float fraction = std::frexp(magnitude, &exponent);  // [0.5, 1)
  // 11 significant bits: round fraction * 2^11 to an integer (ties to even).
  float significand = std::nearbyint(fraction * 2048.0f);
  if (significand == 2048.0f) {
    significand = 1024.0f;
    exponent += 1;
  }
  const int biased = exponent - 1 + 15;
  if (biased >= 31) return uint16_t(sign | 0x7c00);
  return uint16_t(sign | (biased << 10) | (uint16_t(significand) & 0x3ff));
}

float bf16_to_float(uint16_t bits) {
  const uint32_t wide = uint32_t(bits) << 16;
  float out;
  std::memcpy(&out, &wide, 4);
  return out;
}

uint16_t float_to_bf16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  if (std::isnan(value)) return uint16_t((bits >> 16) | 0x40);
  const uint32_t rounding = 0x7fff + ((bits >> 16) & 1);
  return uint16_t((bits + rounding) >> 16);
}

float round_to_tf32(float value) {
  if (!std::isfinite(value)) return value;
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  bits = (bits + 0x1000u) & ~0x1fffu;  // 13 dropped bits; ties away from zero
  float out;
  std::memcpy(&out, &bits, 4);
  return out;
}

int elem_size(Elem elem) {
  switch (elem) {
    case Elem::f16:
    case Elem::bf16:
      return 2;
    case Elem::f32:
    case Elem::i32:
    case Elem::u32:
      return 4;
    case Elem::f64:
    case Elem::i64:
    case Elem::u64:
      return 8;
    case Elem::i8:
    case Elem::u8:
      return 1;
  }
  return 1;
}

const char* elem_name(Elem elem) {
  switch (elem) {
    case Elem::f16:
      return "f16";
    case Elem::bf16:
      return "bf16";
    case Elem::f32:
      return "f32";
    case Elem::f64:
      return "f64";
    case Elem::i8:
      return "i8";
    case Elem::u8:
      return "u8";
    case Elem::i32:
      return "i32";
    case Elem::u32:
      return "u32";
    case Elem::i64:
      return "i64";
    case Elem::u64:
      return "u64";
  }
  return "?";
}

double load_elem(Elem elem, const void* base, int64_t i) {
  switch (elem) {
    case Elem::f16:
      return half_to_float(static_cast<const uint16_t*>(base)[i]);
    case Elem::bf16:
      return bf16_to_float(static_cast<const uint16_t*>(base)[i]);
    case Elem::f32:
      return static_cast<const float*>(base)[i];
    case Elem::f64:
      return static_cast<const double*>(base)[i];
    case Elem::i8:
      return static_cast<const int8_t*>(base)[i];
    case Elem::u8:
      return static_cast<const uint8_t*>(base)[i];
    case Elem::i32:
      return static_cast<const int32_t*>(base)[i];
    case Elem::u32:
      return static_cast<const uint32_t*>(base)[i];
    case Elem::i64:
      return double(static_cast<const int64_t*>(base)[i]);
    case Elem::u64:
      return double(static_cast<const uint64_t*>(base)[i]);
  }
  return 0;
}

void store_elem(Elem elem, void* base, int64_t i, double v) {
  switch (elem) {
    case Elem::f16:
      static_cast<uint16_t*>(base)[i] = float_to_half(float(v));
      return;
    case Elem::bf16:
      static_cast<uint16_t*>(base)[i] = float_to_bf16(float(v));
      return;
    case Elem::f32:
      static_cast<float*>(base)[i] = float(v);
      return;
    case Elem::f64:
      static_cast<double*>(base)[i] = v;
      return;
    case Elem::i8:
      static_cast<int8_t*>(base)[i] = int8_t(int64_t(v));
      return;
    case Elem::u8:
      static_cast<uint8_t*>(base)[i] = uint8_t(int64_t(v));
      return;
    case Elem::i32:
      static_cast<int32_t*>(base)[i] = int32_t(int64_t(v));
      return;
    case Elem::u32:
      static_cast<uint32_t*>(base)[i] = uint32_t(int64_t(v));
      return;
    case Elem::i64:
      static_cast<int64_t*>(base)[i] = int64_t(v);
      return;
    case Elem::u64:
      static_cast<uint64_t*>(base)[i] = uint64_t(v);
      return;
  }
}

}  // namespace sonata::emu

// __half and __nv_bfloat16 (emu/include) against sonata's host types (base/half.h): the
// same bits for every half and bfloat16 value and for floats around every rounding tie.
// NaN is the one documented difference: CUDA's conversions give the canonical 0x7fff,
// base/half.h a quiet NaN with the sign kept.
#include <catch2/catch.hpp>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstring>

#include "base/half.h"

namespace {
uint16_t bits_of(__half h) {
  return __half_as_ushort(h);
}
uint16_t bits_of(__nv_bfloat16 h) {
  return __bfloat16_as_ushort(h);
}
float next_up(float x) {
  return std::nextafter(x, INFINITY);
}
float next_down(float x) {
  return std::nextafter(x, -INFINITY);
}
}  // namespace

TEST_CASE("emu exec: __half converts as base/half.h (round to nearest even)", "[emu][exec]") {
  size_t mismatches = 0;
  auto compare = [&](float f) {
    if (std::isnan(f)) {
      if (bits_of(__float2half_rn(f)) != 0x7fffu) ++mismatches;
      return;
    }
    if (bits_of(__float2half_rn(f)) != sonata::float_to_half_bits(f)) ++mismatches;
  };
  for (uint32_t h = 0; h < 0x10000u; ++h) {
    const float value = sonata::half_bits_to_float(uint16_t(h));
    if (std::isnan(value)) continue;
    const float emulated = __half2float(__ushort_as_half(uint16_t(h)));
    if (std::memcmp(&value, &emulated, 4) != 0) ++mismatches;
    compare(value);
    compare(next_up(value));
    compare(next_down(value));
    // The midpoint to the next half: a tie that rounds to the even neighbour.
    const float above = sonata::half_bits_to_float(uint16_t(h + 1));
    if ((h & 0x7fffu) < 0x7bffu && !std::isinf(above)) {
      const float mid = float((double(value) + double(above)) / 2.0);
      compare(mid);
      compare(next_up(mid));
      compare(next_down(mid));
    }
  }
  for (uint64_t bits = 0; bits < (uint64_t(1) << 32); bits += 9973) {
    float f;
    const uint32_t b = uint32_t(bits);
    std::memcpy(&f, &b, 4);
    compare(f);
  }
  CHECK(mismatches == 0);
  CHECK(bits_of(__float2half_rn(65520.0f)) == 0x7c00u);  // rounds past 65504: inf
  CHECK(bits_of(__float2half_rn(-INFINITY)) == 0xfc00u);
  CHECK(bits_of(__float2half_rn(NAN)) == 0x7fffu);
  CHECK(float(__half(1.0f) + __half(2.0f)) == 3.0f);
}

TEST_CASE("emu exec: __nv_bfloat16 converts as base/half.h (round to nearest even)",
          "[emu][exec]") {
  size_t mismatches = 0;
  for (uint64_t bits = 0; bits < (uint64_t(1) << 32); bits += 997) {
    float f;
    const uint32_t b = uint32_t(bits);
    std::memcpy(&f, &b, 4);
    const uint16_t emulated = bits_of(__float2bfloat16_rn(f));
    if (std::isnan(f) ? emulated != 0x7fffu : emulated != sonata::float_to_bf16_bits(f))
      ++mismatches;
  }
  for (uint32_t h = 0; h < 0x10000u; ++h) {
    const float value = sonata::bf16_bits_to_float(uint16_t(h));
    const float emulated = __bfloat162float(__ushort_as_bfloat16(uint16_t(h)));
    if (std::memcmp(&value, &emulated, 4) != 0) ++mismatches;
    if (std::isnan(value) || std::isinf(value)) continue;
    // Ties (the low 16 bits exactly 0x8000) round to even.
    uint32_t tie;
    std::memcpy(&tie, &value, 4);
    tie |= 0x8000u;
    float f;
    std::memcpy(&f, &tie, 4);
    if (bits_of(__float2bfloat16_rn(f)) != sonata::float_to_bf16_bits(f)) ++mismatches;
  }
  CHECK(mismatches == 0);
  CHECK(bits_of(__float2bfloat16_rn(1.00390625f)) == 0x3f80u);  // tie to even: down
  CHECK(bits_of(__float2bfloat16_rn(1.01171875f)) == 0x3f82u);  // tie to even: up
}

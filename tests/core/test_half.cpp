#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>

#include "base/half.h"

using namespace sonata;

TEST_CASE("f16 conversion matches IEEE binary16 on known values", "[core][half]") {
  CHECK(float_to_half_bits(1.0f) == 0x3c00);
  CHECK(float_to_half_bits(-2.0f) == 0xc000);
  CHECK(float_to_half_bits(65504.0f) == 0x7bff);               // largest finite
  CHECK(float_to_half_bits(65519.0f) == 0x7bff);               // rounds down
  CHECK(float_to_half_bits(65520.0f) == 0x7c00);               // tie rounds to even: infinity
  CHECK(float_to_half_bits(std::ldexp(1.0f, -24)) == 0x0001);  // smallest subnormal
  CHECK(float_to_half_bits(std::ldexp(1.0f, -26)) == 0x0000);  // below half of it: zero
  CHECK(float_to_half_bits(std::ldexp(1.0f, -14)) == 0x0400);  // smallest normal
  // Ties to even: 1 + 2^-11 sits halfway between 1 and 1 + 2^-10.
  CHECK(float_to_half_bits(1.0f + std::ldexp(1.0f, -11)) == 0x3c00);
  CHECK(float_to_half_bits(1.0f + 3 * std::ldexp(1.0f, -11)) == 0x3c02);
  CHECK(float_to_half_bits(std::numeric_limits<float>::infinity()) == 0x7c00);
  CHECK((float_to_half_bits(std::nanf("")) & 0x7c00) == 0x7c00);
  CHECK((float_to_half_bits(std::nanf("")) & 0x03ff) != 0);
}

TEST_CASE("every finite f16 value survives a round trip through float", "[core][half]") {
  int mismatches = 0;
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    const uint16_t h = uint16_t(bits);
    if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff)) continue;  // NaN payloads
    if (float_to_half_bits(half_bits_to_float(h)) != h) ++mismatches;
  }
  CHECK(mismatches == 0);
  CHECK(half_bits_to_float(0x3555) == Approx(0.333251953125f).epsilon(0));
  CHECK(half_bits_to_float(0x0001) == std::ldexp(1.0f, -24));
}

TEST_CASE("bf16 rounds to nearest even and keeps NaN", "[core][half]") {
  CHECK(float_to_bf16_bits(1.0f) == 0x3f80);
  CHECK(float_to_bf16_bits(-1.5f) == 0xbfc0);
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: stays at 1 (even).
  CHECK(float_to_bf16_bits(1.0f + std::ldexp(1.0f, -8)) == 0x3f80);
  CHECK(float_to_bf16_bits(1.0f + 3 * std::ldexp(1.0f, -8)) == 0x3f82);
  CHECK(std::isnan(bf16_bits_to_float(float_to_bf16_bits(std::nanf("")))));
  CHECK(bf16_bits_to_float(0x4049) == 3.140625f);
}

// The emulated half and bfloat16 math against the CUDA Math API's words, with references
// written here from the definitions (exact integers, the table of every half): __hfma
// rounds once, __hmax/__hmin return the other operand for one NaN and order -0.0 below
// +0.0, __double2half and __double2bfloat16 round the double once (not through float).
#include <catch2/catch.hpp>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace {

uint16_t bits_of(__half h) {
  return __half_as_ushort(h);
}
uint16_t bits_of(__nv_bfloat16 h) {
  return __bfloat16_as_ushort(h);
}
__half half_of(uint16_t bits) {
  return __ushort_as_half(bits);
}
__nv_bfloat16 bf16_of(uint16_t bits) {
  return __ushort_as_bfloat16(bits);
}

// Every finite non-negative half, ascending (bits 0 .. 0x7bff are in value order), exactly.
const std::vector<double>& half_values() {
  static const std::vector<double> values = [] {
    std::vector<double> v;
    for (uint32_t h = 0; h <= 0x7bffu; ++h) {
      const uint32_t exponent = h >> 10, mantissa = h & 0x3ffu;
      v.push_back(exponent == 0 ? std::ldexp(double(mantissa), -24)
                                : std::ldexp(double(mantissa | 0x400u), int(exponent) - 25));
    }
    return v;
  }();
  return values;
}

// The nearest half to a non-negative magnitude given by `above(i)`: whether it lies above
// the midpoint of halves i and i+1 (+1), on it (0) or below (-1). Ties go to the even bits.
template <typename Compare>
uint16_t nearest_half_bits(Compare compare_to_mid) {
  const size_t last = half_values().size() - 1;  // 65504
  // Past 65504's upper midpoint (65520) or on it (ties to even: 0x7c00): infinity.
  if (compare_to_mid(last) >= 0) return 0x7c00u;
  size_t lo = 0, hi = last;  // find the first i whose upper midpoint is above the value
  while (lo < hi) {
    const size_t mid = (lo + hi) / 2;
    if (compare_to_mid(mid) >= 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  const size_t i = lo;  // the value is at or below i's upper midpoint, above i-1's
  if (i > 0 && compare_to_mid(i - 1) == 0) return uint16_t((i - 1) % 2 == 0 ? i - 1 : i);
  return uint16_t(i);
}

// The half nearest to a double, from the table.
uint16_t reference_double_to_half(double value) {
  const double magnitude = std::fabs(value);
  const auto& v = half_values();
  const uint16_t bits = nearest_half_bits([&](size_t i) {
    const double mid = i + 1 < v.size() ? (v[i] + v[i + 1]) / 2 : 65520.0;  // exact
    return magnitude > mid ? 1 : magnitude == mid ? 0 : -1;
  });
  return uint16_t(bits | (std::signbit(value) ? 0x8000u : 0u));
}

// a * b + c for halves, exactly in units of 2^-48 (every half is a multiple of 2^-24, the
// largest product below 2^32), then rounded once through the table.
uint16_t reference_half_fma(uint16_t a, uint16_t b, uint16_t c) {
  auto units = [](uint16_t h) {  // h * 2^24, an exact integer
    const double value = double(__half2float(half_of(h)));
    return __int128(std::ldexp(value, 24));
  };
  const __int128 sum = units(a) * units(b) + units(c) * (__int128(1) << 24);
  const __int128 magnitude = sum < 0 ? -sum : sum;
  const auto& v = half_values();
  auto scaled = [&](size_t i) {  // v[i] in units of 2^-48
    return __int128(std::ldexp(v[i], 24)) << 24;
  };
  const uint16_t bits = nearest_half_bits([&](size_t i) {
    const __int128 twice_mid =
        i + 1 < v.size() ? scaled(i) + scaled(i + 1) : __int128(65520 * 2) << 48;
    const __int128 twice = 2 * magnitude;
    return twice > twice_mid ? 1 : twice == twice_mid ? 0 : -1;
  });
  return uint16_t(bits | (sum < 0 ? 0x8000u : 0u));
}

}  // namespace

TEST_CASE("emu exec: __hfma rounds a * b + c once, as the Math API's fused multiply-add",
          "[emu][exec]") {
  // 2^-11 (1 + 2^-10) * -(1 - 2^-10) + (1 + 2^-10) = 1 + 2^-11 + 2^-31: just above the tie
  // between 1 and 1 + 2^-10, so 0x3c01. Rounded to float first it lands on the tie, and
  // the tie goes to the even 0x3c00.
  const __half a = __double2half(std::ldexp(1 + std::ldexp(1.0, -10), -11));
  const __half b = __double2half(-(1 - std::ldexp(1.0, -10)));
  const __half c = __double2half(1 + std::ldexp(1.0, -10));
  CHECK(bits_of(__hfma(a, b, c)) == 0x3c01u);
  CHECK(bits_of(__hfma(a, b, c)) == reference_half_fma(bits_of(a), bits_of(b), bits_of(c)));
  // bfloat16: 35/32 * 11/8 = 1.50390625, the tie between 0x3fc0 and 0x3fc1; 2^-100 above it
  // must round up. Through a double sum it is lost, and the tie goes to the even 0x3fc0.
  CHECK(bits_of(__hfma(__float2bfloat16_rn(35.0f / 32), __float2bfloat16_rn(11.0f / 8),
                       __float2bfloat16_rn(std::ldexp(1.0f, -100)))) == 0x3fc1u);
  CHECK(bits_of(__hfma(__float2bfloat16_rn(35.0f / 32), __float2bfloat16_rn(11.0f / 8),
                       __float2bfloat16_rn(-std::ldexp(1.0f, -100)))) == 0x3fc0u);

  // Random finite halves against the exact reference (zero sums aside: their sign is a
  // separate rule).
  std::mt19937 rng(47);
  std::uniform_int_distribution<uint32_t> pick(0, 0xffffu);
  auto finite = [&] {
    for (;;) {
      const uint16_t h = uint16_t(pick(rng));
      if ((h & 0x7c00u) != 0x7c00u) return h;
    }
  };
  size_t mismatches = 0, compared = 0;
  for (int i = 0; i < 20000; ++i) {
    // Exponents near each other often enough to cancel and to round at ties.
    const uint16_t x = finite(), y = finite();
    const uint16_t z = uint16_t((finite() & 0x83ffu) | (((x >> 10) & 0x1fu) << 10));
    const float exact_check = __half2float(half_of(x)) * __half2float(half_of(y));
    if (exact_check + __half2float(half_of(z)) == 0.0f) continue;
    ++compared;
    if (bits_of(__hfma(half_of(x), half_of(y), half_of(z))) != reference_half_fma(x, y, z))
      ++mismatches;
  }
  CHECK(compared > 19000);
  CHECK(mismatches == 0);
}

TEST_CASE("emu exec: __hmax and __hmin return the other input for one NaN, -0.0 below +0.0",
          "[emu][exec]") {
  // Math API: "If either of inputs is NaN, the other input is returned. If both inputs are
  // NaNs, then canonical NaN is returned. If values of both inputs are 0.0, then +0.0 > -0.0".
  const uint16_t one = 0x3c00u, nan = 0x7e00u, plus_zero = 0x0000u, minus_zero = 0x8000u;
  CHECK(bits_of(__hmax(half_of(nan), half_of(one))) == one);
  CHECK(bits_of(__hmax(half_of(one), half_of(nan))) == one);
  CHECK(bits_of(__hmin(half_of(nan), half_of(one))) == one);
  CHECK(bits_of(__hmin(half_of(one), half_of(nan))) == one);
  CHECK(bits_of(__hmax(half_of(nan), half_of(0xfe01u))) == 0x7fffu);
  CHECK(bits_of(__hmin(half_of(0xfe01u), half_of(nan))) == 0x7fffu);
  CHECK(bits_of(__hmax(half_of(minus_zero), half_of(plus_zero))) == plus_zero);
  CHECK(bits_of(__hmax(half_of(plus_zero), half_of(minus_zero))) == plus_zero);
  CHECK(bits_of(__hmin(half_of(minus_zero), half_of(plus_zero))) == minus_zero);
  CHECK(bits_of(__hmin(half_of(plus_zero), half_of(minus_zero))) == minus_zero);
  CHECK(bits_of(__hmax(half_of(0xbc00u), half_of(one))) == one);
  CHECK(bits_of(__hmin(half_of(0xbc00u), half_of(one))) == 0xbc00u);

  const uint16_t bf_one = 0x3f80u, bf_nan = 0x7fc0u;
  CHECK(bits_of(__hmax(bf16_of(bf_nan), bf16_of(bf_one))) == bf_one);
  CHECK(bits_of(__hmax(bf16_of(bf_one), bf16_of(bf_nan))) == bf_one);
  CHECK(bits_of(__hmin(bf16_of(bf_nan), bf16_of(bf_one))) == bf_one);
  CHECK(bits_of(__hmin(bf16_of(bf_one), bf16_of(bf_nan))) == bf_one);
  CHECK(bits_of(__hmax(bf16_of(bf_nan), bf16_of(0xffc1u))) == 0x7fffu);
  CHECK(bits_of(__hmax(bf16_of(minus_zero), bf16_of(plus_zero))) == plus_zero);
  CHECK(bits_of(__hmax(bf16_of(plus_zero), bf16_of(minus_zero))) == plus_zero);
  CHECK(bits_of(__hmin(bf16_of(minus_zero), bf16_of(plus_zero))) == minus_zero);
  CHECK(bits_of(__hmin(bf16_of(plus_zero), bf16_of(minus_zero))) == minus_zero);
}

TEST_CASE("emu exec: __double2half and __double2bfloat16 round the double once", "[emu][exec]") {
  // 1 + 2^-11 + 2^-40 is above the tie between 1 and 1 + 2^-10; as a float it is the tie.
  CHECK(bits_of(__double2half(1 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40))) == 0x3c01u);
  CHECK(bits_of(__double2half(1 + std::ldexp(1.0, -11))) == 0x3c00u);  // the tie: even
  CHECK(bits_of(__half(1 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40))) == 0x3c01u);
  CHECK(bits_of(__double2bfloat16(1 + std::ldexp(1.0, -8) + std::ldexp(1.0, -40))) == 0x3f81u);
  CHECK(bits_of(__double2bfloat16(1 + std::ldexp(1.0, -8))) == 0x3f80u);
  CHECK(bits_of(__double2bfloat16(-1e300)) == 0xff80u);
  CHECK(bits_of(__double2half(1e300)) == 0x7c00u);
  CHECK(bits_of(__double2half(65519.99)) == 0x7bffu);
  CHECK(bits_of(__double2half(65520.0)) == 0x7c00u);
  CHECK(bits_of(__double2half(std::nan(""))) == 0x7fffu);

  // Every half's neighbourhood: the value, its midpoints with the next half and a double's
  // step either side of them, against the table.
  const auto& v = half_values();
  size_t mismatches = 0;
  for (size_t i = 0; i + 1 < v.size(); ++i) {
    const double mid = (v[i] + v[i + 1]) / 2;
    for (const double x : {v[i], mid, std::nextafter(mid, 0.0), std::nextafter(mid, 1e9),
                           -std::nextafter(mid, 1e9)}) {
      if (bits_of(__double2half(x)) != reference_double_to_half(x)) ++mismatches;
    }
  }
  CHECK(mismatches == 0);
}

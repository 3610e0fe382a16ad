// The process-wide TF32 setting (base/math_mode.h): its default, what each mode allows, the
// parse of --tf32's values and the scope guard the CUDA parity tests use.
#include <catch2/catch.hpp>

#include "base/error.h"
#include "base/math_mode.h"

using namespace sonata;
using Catch::Matchers::Contains;

TEST_CASE("TF32: convolutions only by default, as PyTorch", "[core][tf32]") {
  CHECK(kDefaultTf32Mode == Tf32Mode::conv);
  // Other tests may have changed the current mode: set each in turn, restore at the end.
  const Tf32ModeGuard restore(kDefaultTf32Mode);
  CHECK(tf32_allowed_in_conv());
  CHECK_FALSE(tf32_allowed_in_gemm());
  set_tf32_mode(Tf32Mode::all);
  CHECK(tf32_allowed_in_conv());
  CHECK(tf32_allowed_in_gemm());
  set_tf32_mode(Tf32Mode::off);
  CHECK_FALSE(tf32_allowed_in_conv());
  CHECK_FALSE(tf32_allowed_in_gemm());
}

TEST_CASE("TF32: --tf32 parses off, conv and all, and names a bad value", "[core][tf32]") {
  CHECK(parse_tf32_mode("off") == Tf32Mode::off);
  CHECK(parse_tf32_mode("conv") == Tf32Mode::conv);
  CHECK(parse_tf32_mode("all") == Tf32Mode::all);
  for (Tf32Mode mode : {Tf32Mode::off, Tf32Mode::conv, Tf32Mode::all})
    CHECK(parse_tf32_mode(tf32_mode_name(mode)) == mode);
  CHECK_THROWS_WITH(parse_tf32_mode("on"), Contains("--tf32") && Contains("'on'"));
  CHECK_THROWS_WITH(parse_tf32_mode("CONV", "tf32"), Contains("tf32 must be off, conv or all"));
  CHECK_THROWS_AS(parse_tf32_mode(""), Error);
}

TEST_CASE("TF32: the guard restores the previous mode", "[core][tf32]") {
  const Tf32ModeGuard outer(Tf32Mode::all);
  {
    const Tf32ModeGuard inner(Tf32Mode::off);
    CHECK(tf32_mode() == Tf32Mode::off);
  }
  CHECK(tf32_mode() == Tf32Mode::all);
}

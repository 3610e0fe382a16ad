#include <catch2/catch.hpp>

#include <cmath>

#include "base/philox.h"
#include "engine/ops.h"
#include "engine/random.h"

using namespace sonata;

// Known-answer vectors of Philox4x32-10 from the Random123 distribution (kat_vectors).
TEST_CASE("Philox4x32-10 reproduces the Random123 known answers", "[core][rng]") {
  struct Kat {
    Philox4 counter;
    uint32_t key0, key1;
    Philox4 expected;
  };
  const Kat kats[] = {
      {{{0, 0, 0, 0}}, 0, 0, {{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}}},
      {{{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}},
       0xffffffff,
       0xffffffff,
       {{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}}},
      {{{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}},
       0xa4093822,
       0x299f31d0,
       {{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}}},
  };
  for (const Kat& kat : kats) {
    const Philox4 out = philox4x32_10(kat.counter, kat.key0, kat.key1);
    for (int lane = 0; lane < 4; ++lane) CHECK(out.v[lane] == kat.expected.v[lane]);
  }
}

TEST_CASE("rand values depend only on seed and position", "[core][rng]") {
  Generator a(42), b(42);
  const std::vector<double> short_run =
      rand({10}, TensorOptions{}.with(DType::f64), &a).to_vector<double>();
  const std::vector<double> long_run =
      rand({13}, TensorOptions{}.with(DType::f64), &b).to_vector<double>();
  for (size_t i = 0; i < short_run.size(); ++i) CHECK(short_run[i] == long_run[i]);
  // The generator moved past the blocks it used: the next draw is new.
  CHECK(a.offset() == 3);
  const double next = rand({1}, TensorOptions{}.with(DType::f64), &a).item();
  CHECK(next != short_run[0]);
  for (double v : short_run) CHECK((v >= 0.0 && v < 1.0));
  // The first value is the top 24 bits of the first Philox word, scaled.
  const Philox4 first = philox_block(42, 0, 0);
  CHECK(short_run[0] == double(first.v[0] >> 8) / double(1 << 24));
}

TEST_CASE("randn has mean 0 and variance 1", "[core][rng]") {
  Generator g(7);
  const Tensor x = randn({200000}, TensorOptions{}.with(DType::f64), &g);
  CHECK(std::abs(mean(x).item()) < 0.01);
  CHECK(std::abs(var(x).item() - 1.0) < 0.01);
  const Tensor u = rand({200000}, {}, &g);
  CHECK(std::abs(mean(u).item() - 0.5) < 0.005);
}

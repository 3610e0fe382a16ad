// dropout: mask frequency and scaling, the mask against Philox draws made by hand and the
// float64 gradient check over the table in tests/cases/dropout_cases.h, repeated masks for a
// repeated generator state, evaluation identity.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "base/error.h"
#include "base/philox.h"
#include "engine/ops.h"
#include "engine/ops/dropout.h"
#include "engine/random.h"
#include "tests/cases/dropout_cases.h"
#include "tests/ops/op_test_util.h"

using namespace sonata;
using namespace sonata::testing;

TEST_CASE("dropout keeps about 1 - p of the elements, scaled by 1 / (1 - p)", "[ops][dropout]") {
  const int64_t n = 1 << 16;
  for (double p : {0.1, 0.5, 0.8}) {
    INFO("p " << p);
    Generator generator(42, 3);
    const std::vector<double> y = values_of(dropout(ones({n}), p, true, &generator));
    int64_t dropped = 0;
    for (double v : y) {
      if (v == 0) {
        ++dropped;
      } else {
        REQUIRE(v == Approx(1.0 / (1.0 - p)).epsilon(1e-7));
      }
    }
    CHECK(double(dropped) / double(n) == Approx(p).margin(0.01));
    CHECK(generator.offset() == uint64_t(n / 4));
  }
}

TEST_CASE("dropout keeps element e when the Philox draw of the element mapping is >= p",
          "[ops][dropout]") {
  for (const DropoutCase& test : dropout_cases()) {
    INFO(test.name << ", p " << test.p);
    const double p = test.p;
    Generator generator(9, 2);
    generator.set_offset(5);
    const Tensor x = test.input_of(grad_input(test.shape, 901, 0.5, 1.5).detach());
    const int64_t n = x.numel();
    const std::vector<double> xv = values_of(x);
    const std::vector<double> y = values_of(dropout(x, p, true, &generator));
    CHECK(generator.offset() == 5 + uint64_t((n + 3) / 4));
    for (int64_t e = 0; e < n; ++e) {
      const Philox4 bits = philox_block(9, 2, 5 + uint64_t(e / 4));
      const bool kept = philox_uniform(bits.v[e % 4]) >= float(p);
      CHECK(y[size_t(e)] == Approx(kept ? xv[size_t(e)] / (1 - p) : 0.0).epsilon(1e-15));
    }
  }
}

TEST_CASE("dropout repeats its mask for a repeated generator state", "[ops][dropout]") {
  const Tensor x = grad_input({3, 50}, 911).detach();
  Generator a(5), b(5);
  const std::vector<double> first = values_of(dropout(x, 0.3, true, &a));
  CHECK(values_of(dropout(x, 0.3, true, &b)) == first);
  CHECK(values_of(dropout(x, 0.3, true, &a)) != first);  // the stream moved on
  manual_seed(77);
  const std::vector<double> from_default = values_of(dropout(x, 0.3, true));
  manual_seed(77);
  CHECK(values_of(dropout(x, 0.3, true)) == from_default);
  // f32 drops the same elements as f64.
  Generator c(5);
  const std::vector<double> f32 = values_of(dropout(x.to(DType::f32), 0.3, true, &c));
  for (size_t i = 0; i < f32.size(); ++i) CHECK((f32[i] == 0) == (first[i] == 0));
}

TEST_CASE("dropout is the identity in evaluation or for p = 0, zeros for p = 1", "[ops][dropout]") {
  const Tensor x = grad_input({4, 5}, 921);
  CHECK(dropout(x, 0.5, false).same(x));
  CHECK(dropout(x, 0.0, true).same(x));
  for (double v : values_of(dropout(x, 1.0, true))) CHECK(v == 0.0);
  try {
    dropout(x, 1.5, true);
    FAIL("no error");
  } catch (const Error& e) {
    CHECK_THAT(std::string(e.what()), Catch::Contains("p = 1.5 is outside [0, 1]"));
  }
}

TEST_CASE("dropout gradients use the forward's mask", "[ops][dropout][grad]") {
  for (const DropoutCase& test : dropout_cases()) {
    if (test.large) continue;
    INFO(test.name << ", p " << test.p);
    const Tensor x = grad_input(test.shape, 931);
    require_gradients(
        [&](const std::vector<Tensor>& in) { return dropout(test.input_of(in[0]), test.p, true); },
        {x});
  }
  // The gradient is the mask times the scale, exactly.
  Tensor x = grad_input({3, 7}, 931);
  Generator generator(13);
  const Tensor y = dropout(x, 0.25, true, &generator);
  sum(y).backward();
  const std::vector<double> yv = values_of(y), g = values_of(x.grad()), xv = values_of(x);
  for (size_t i = 0; i < g.size(); ++i)
    CHECK(g[i] == (yv[i] == 0 && xv[i] != 0 ? 0.0 : 1.0 / 0.75));
}

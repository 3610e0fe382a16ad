#include <catch2/catch.hpp>

#include "base/error.h"
#include "engine/ops.h"
#include "tests/cases/view_cases.h"
#include "tests/ops/op_test_util.h"

using namespace sonata;
using namespace sonata::testing;

// Each view is followed by a multiplication with a fixed pattern so that the gradient
// differs per element and a misrouted element cannot cancel out.
TEST_CASE("view ops gradients", "[ops][shape][grad]") {
  uint64_t seed = 700;
  for (const ViewCase& c : view_cases()) {
    if (c.large) continue;
    INFO(c.name);
    const Tensor x = grad_input(c.input, ++seed);
    const Tensor pattern = grad_input(c.fn(x.detach()).shape(), ++seed).detach();
    require_gradients([&](const std::vector<Tensor>& in) { return mul(c.fn(in[0]), pattern); },
                      {x});
  }
}

TEST_CASE("view ops in f32 give the f64 values rounded", "[ops][shape]") {
  // A view or copy only moves elements, so rounding before or after it is the same: any
  // difference is an element the f32 path misplaced.
  uint64_t seed = 750;
  for (const ViewCase& c : view_cases()) {
    INFO(c.name);
    const Tensor x = grad_input(c.input, ++seed).detach();
    const Tensor y32 = c.fn(x.to(DType::f32));
    CHECK(y32.dtype() == DType::f32);
    CHECK(y32.shape() == c.fn(x).shape());
    CHECK(y32.to_vector<float>() == c.fn(x).to(DType::f32).to_vector<float>());
  }
}

TEST_CASE("views share storage and index as expected", "[ops][shape]") {
  const Tensor x = arange(0, 24, 1, f64_options()).view({2, 3, 4});
  SECTION("permute") {
    const Tensor p = x.permute({2, 0, 1});
    CHECK(p.shape() == Shape{4, 2, 3});
    CHECK(p.storage() == x.storage());
    const std::vector<double> v = values_of(p);
    for (int64_t k = 0; k < 4; ++k)
      for (int64_t i = 0; i < 2; ++i)
        for (int64_t j = 0; j < 3; ++j)
          CHECK(v[size_t(flat_index({4, 2, 3}, {k, i, j}))] == double(i * 12 + j * 4 + k));
  }
  SECTION("slice with step and select") {
    const Tensor s = x.slice(2, 1, 4, 2);  // columns 1 and 3
    CHECK(s.shape() == Shape{2, 3, 2});
    CHECK(!s.is_contiguous());
    CHECK(values_of(s.select(0, 1).select(0, 2)) == std::vector<double>{21, 23});
    CHECK(values_of(x.select(1, -1)) == std::vector<double>{8, 9, 10, 11, 20, 21, 22, 23});
  }
  SECTION("expand repeats without copying") {
    const Tensor e = f64_tensor({1, 2}, {2, 1}).expand({2, 3});
    CHECK(e.strides()[1] == 0);
    CHECK(values_of(e) == std::vector<double>{1, 1, 1, 2, 2, 2});
  }
  SECTION("transpose then reshape copies in the transposed order") {
    const Tensor m = arange(0, 6, 1, f64_options()).view({2, 3});
    CHECK(values_of(m.t().reshape({6})) == std::vector<double>{0, 3, 1, 4, 2, 5});
    CHECK(values_of(m.t().contiguous()) == std::vector<double>{0, 3, 1, 4, 2, 5});
    CHECK(m.t().contiguous().is_contiguous());
  }
  SECTION("squeeze of a dim that is not 1 is a no-op, as torch") {
    CHECK(x.squeeze(0).shape() == Shape{2, 3, 4});
    CHECK(x.unsqueeze(0).squeeze(0).shape() == Shape{2, 3, 4});
  }
  SECTION("flatten") {
    CHECK(x.flatten().shape() == Shape{24});
    CHECK(x.flatten(0, 1).shape() == Shape{6, 4});
    CHECK(f64_tensor({5}, {}).flatten().shape() == Shape{1});
  }
  SECTION("clone does not share storage") {
    const Tensor c = x.clone();
    CHECK(c.storage() != x.storage());
    CHECK(values_of(c) == values_of(x));
  }
}

TEST_CASE("view errors name the problem", "[ops][shape][errors]") {
  const Tensor x = zeros({2, 3});
  CHECK_THROWS_WITH(x.t().view({6}), Catch::Contains("reshape"));
  CHECK_THROWS_WITH(x.view({4, 2}), Catch::Contains("[4, 2]"));
  CHECK_THROWS_AS(x.view({-1, -1}), Error);
  CHECK_THROWS_AS(x.permute({0, 0}), Error);
  CHECK_THROWS_AS(x.expand({3, 3}), Error);
  CHECK_THROWS_WITH(x.select(0, 2), Catch::Contains("index 2"));
  CHECK_THROWS_WITH(x.transpose(0, 2), Catch::Contains("dim 2"));
}

TEST_CASE("cat gradients and values", "[ops][shape][grad]") {
  SECTION("dim 0 with three pieces of different lengths") {
    const Tensor a = grad_input({1, 3}, 801), b = grad_input({2, 3}, 802),
                 c = grad_input({3, 3}, 803);
    require_gradients([](const std::vector<Tensor>& in) { return cat(in, 0); }, {a, b, c});
  }
  SECTION("last dim with a transposed piece") {
    const Tensor a = grad_input({3, 2}, 804), b = grad_input({4, 3}, 805);
    require_gradients(
        [](const std::vector<Tensor>& in) {
          return cat({in[0], in[1].t()}, -1);
        },
        {a, b});
  }
  SECTION("middle dim, one input without grad") {
    const Tensor a = grad_input({2, 1, 2}, 806), b = grad_input({2, 3, 2}, 807).detach();
    require_gradients([](const std::vector<Tensor>& in) { return cat(in, 1); }, {a, b});
  }
  SECTION("values") {
    const Tensor a = f64_tensor({1, 2, 3, 4}, {2, 2}), b = f64_tensor({5, 6}, {2, 1});
    CHECK(values_of(cat({a, b}, 1)) == std::vector<double>{1, 2, 5, 3, 4, 6});
    CHECK(values_of(cat({a, b.t()}, 0)) == std::vector<double>{1, 2, 3, 4, 5, 6});
    CHECK_THROWS_WITH(cat({a, b}, 0), Catch::Contains("[2, 1]") && Catch::Contains("[2, 2]"));
  }
}

TEST_CASE("stack gradients and values", "[ops][shape][grad]") {
  const Tensor a = grad_input({2, 3}, 811), b = grad_input({2, 3}, 812);
  for (int64_t dim : {0, 1, 2, -1}) {
    INFO("dim " << dim);
    require_gradients([&](const std::vector<Tensor>& in) { return stack(in, dim); }, {a, b});
  }
  const Tensor x = f64_tensor({1, 2}, {2}), y = f64_tensor({3, 4}, {2});
  CHECK(stack({x, y}, 0).shape() == Shape{2, 2});
  CHECK(values_of(stack({x, y}, 0)) == std::vector<double>{1, 2, 3, 4});
  CHECK(values_of(stack({x, y}, 1)) == std::vector<double>{1, 3, 2, 4});
  CHECK_THROWS_AS(stack({x, f64_tensor({1, 2, 3}, {3})}, 0), Error);
}

TEST_CASE("split gradients and values", "[ops][shape][grad]") {
  SECTION("equal pieces, all used") {
    const Tensor x = grad_input({6, 2}, 821);
    require_gradients(
        [](const std::vector<Tensor>& in) {
          const std::vector<Tensor> parts = split(in[0], 2, 0);
          return add(add(mul(parts[0], 2.0), mul(parts[1], -1.0)), exp(parts[2]));
        },
        {x});
  }
  SECTION("sizes along the last dim, only some pieces used downstream") {
    const Tensor x = grad_input({2, 7}, 822);
    require_gradients(
        [](const std::vector<Tensor>& in) {
          const std::vector<Tensor> parts = split(in[0], std::vector<int64_t>{3, 1, 3}, -1);
          return mul(parts[0], parts[2]);  // the middle piece gets no gradient
        },
        {x});
    require_gradients(
        [](const std::vector<Tensor>& in) {
          return split(in[0], std::vector<int64_t>{3, 1, 3}, 1)[1];  // only the middle one
        },
        {x});
  }
  SECTION("uneven pieces of a transposed input") {
    const Tensor x = grad_input({3, 5}, 823);
    require_gradients(
        [](const std::vector<Tensor>& in) {
          const std::vector<Tensor> parts = split(in[0].t(), 2, 0);  // 2, 2, 1 rows
          return cat({parts[2], parts[0]}, 0);
        },
        {x});
  }
  SECTION("values and errors") {
    const Tensor x = arange(0, 10, 1, f64_options());
    const std::vector<Tensor> parts = split(x, 4, 0);
    REQUIRE(parts.size() == 3);
    CHECK(values_of(parts[0]) == std::vector<double>{0, 1, 2, 3});
    CHECK(values_of(parts[2]) == std::vector<double>{8, 9});
    const std::vector<Tensor> sized = split(x, std::vector<int64_t>{1, 0, 9}, 0);
    CHECK(sized[1].numel() == 0);
    CHECK(values_of(sized[0]) == std::vector<double>{0});
    CHECK_THROWS_WITH(split(x, std::vector<int64_t>{3, 3}, 0), Catch::Contains("10"));
    CHECK_THROWS_AS(split(x, 0, 0), Error);
  }
}

TEST_CASE("cast and to(dtype)", "[ops][shape][grad]") {
  SECTION("f64 to f32 and back is differentiable") {
    // The f32 round trip changes values by one rounding (about 6e-8), so central differences
    // need a step much larger than that; the function is linear, so the large step is exact.
    GradCheckOptions options;
    options.eps = 1e-2;
    options.tolerance = 1e-4;
    const Tensor x = grad_input({3, 4}, 831);
    require_gradients(
        [](const std::vector<Tensor>& in) { return mul(in[0].to(DType::f32), 3.0).to(DType::f64); },
        {x}, options);
    require_gradients([](const std::vector<Tensor>& in) { return cast(in[0].t(), DType::f32); },
                      {x}, options);
  }
  SECTION("gradient arrives in the source dtype") {
    const Tensor x = f64_leaf({1.5, -2.25}, {2});
    const Tensor y = x.to(DType::f32);
    CHECK(y.dtype() == DType::f32);
    mul(y, 2.0).backward(ones({2}));
    REQUIRE(x.grad().defined());
    CHECK(x.grad().dtype() == DType::f64);
    CHECK(values_of(x.grad()) == std::vector<double>{2, 2});
  }
  SECTION("same dtype is the same tensor; integer casts truncate and carry no grad") {
    const Tensor x = f64_leaf({1.75, -2.5, 3.0}, {3});
    CHECK(x.to(DType::f64).same(x));
    const Tensor i = cast(x, DType::i64);
    CHECK(i.dtype() == DType::i64);
    CHECK(!i.requires_grad());
    CHECK(i.to_vector<int64_t>() == std::vector<int64_t>{1, -2, 3});
    const Tensor b = cast(f64_tensor({0, 2, -1}, {3}), DType::boolean);
    CHECK(values_of(b) == std::vector<double>{0, 1, 1});
  }
  SECTION("half types round on the CPU") {
    // 1 + 2^-11 is halfway between f16 neighbours 1 and 1 + 2^-10: rounds to even (1).
    const Tensor x = f64_tensor({1.0 + 1.0 / 2048, 3.0 + 1.0 / 128, 0.1}, {3});
    const std::vector<double> h = values_of(x.to(DType::f16));
    CHECK(h[0] == 1.0);
    CHECK(h[1] == 3.0078125);
    CHECK(h[2] == Approx(0.1).epsilon(1e-3));
    const std::vector<double> bf = values_of(x.to(DType::bf16));
    CHECK(bf[0] == 1.0);
    CHECK(bf[2] == Approx(0.1).epsilon(4e-3));
  }
}

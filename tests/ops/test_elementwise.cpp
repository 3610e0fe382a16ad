#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <map>
#include <string>

#include "base/error.h"
#include "engine/ops.h"
#include "engine/random.h"
#include "tests/cases/elementwise_cases.h"
#include "tests/ops/op_test_util.h"

using namespace sonata;
using namespace sonata::testing;

namespace {

Tensor rhs_input(const BinaryCase& op, const Shape& shape, uint64_t seed) {
  return grad_input(shape, seed, op.rhs_low, op.rhs_high);
}

}  // namespace

TEST_CASE("binary ops gradients with broadcasting", "[ops][elementwise][grad]") {
  for (const BinaryCase& op : binary_cases()) {
    INFO(op.name);
    SECTION("same shape " + op.name) {
      const Tensor a = grad_input({3, 4}, 1), b = rhs_input(op, {3, 4}, 2);
      require_gradients([&](const std::vector<Tensor>& in) { return op.fn(in[0], in[1]); }, {a, b});
    }
    SECTION("[3,1,4] with [2,4] " + op.name) {
      const Tensor a = grad_input({3, 1, 4}, 3), b = rhs_input(op, {2, 4}, 4);
      require_gradients([&](const std::vector<Tensor>& in) { return op.fn(in[0], in[1]); }, {a, b});
    }
    SECTION("0-d scalar with a matrix " + op.name) {
      const Tensor s = grad_input({}, 5, 0.6, 0.9), m = rhs_input(op, {3, 4}, 6);
      require_gradients([&](const std::vector<Tensor>& in) { return op.fn(in[0], in[1]); }, {s, m});
      require_gradients([&](const std::vector<Tensor>& in) { return op.fn(in[1], in[0]); }, {s, m});
    }
    SECTION("non-contiguous operands " + op.name) {
      const Tensor a = grad_input({4, 3}, 7), b = rhs_input(op, {6, 4}, 8);
      require_gradients(
          [&](const std::vector<Tensor>& in) { return op.fn(in[0].t(), in[1].slice(0, 0, 6, 2)); },
          {a, b});
    }
  }
}

TEST_CASE("binary ops forward matches a hand loop with broadcasting", "[ops][elementwise]") {
  const Tensor a = grad_input({3, 1, 4}, 11).detach(),
               b = grad_input({2, 4}, 12, 0.5, 1.5).detach();
  const std::vector<double> av = values_of(a), bv = values_of(b);
  for (const BinaryCase& op : binary_cases()) {
    INFO(op.name);
    const Tensor out = op.fn(a, b);
    REQUIRE(out.shape() == Shape{3, 2, 4});
    const std::vector<double> got = values_of(out);
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t j = 0; j < 2; ++j)
        for (int64_t k = 0; k < 4; ++k)
          CHECK(got[size_t(flat_index({3, 2, 4}, {i, j, k}))] ==
                Approx(op.truth(av[size_t(i * 4 + k)], bv[size_t(j * 4 + k)])).epsilon(1e-15));
  }
}

TEST_CASE("broadcast add of written-out tensors", "[ops][elementwise]") {
  const Tensor column = f64_tensor({1, 2}, {2, 1});
  const Tensor row = f64_tensor({10, 20, 30}, {3});
  const Tensor out = add(column, row);
  REQUIRE(out.shape() == Shape{2, 3});
  CHECK(values_of(out) == std::vector<double>{11, 21, 31, 12, 22, 32});

  const Tensor scalar = f64_tensor({100}, {});
  CHECK(values_of(add(scalar, column)) == std::vector<double>{101, 102});
  CHECK(values_of(sub(row, scalar)) == std::vector<double>{-90, -80, -70});
  CHECK(values_of(mul(column, row)) == std::vector<double>{10, 20, 30, 20, 40, 60});
  CHECK(values_of(div(row, column)) == std::vector<double>{10, 20, 30, 5, 10, 15});
}

TEST_CASE("alike-permuted operands keep their layout and values", "[ops][elementwise]") {
  // [2, 3, 4] stored as [4, 2, 3]: both operands share that permuted dense layout.
  const Tensor a_store = grad_input({4, 2, 3}, 21).detach(),
               b_store = grad_input({4, 2, 3}, 22).detach();
  const Tensor a = a_store.permute({1, 2, 0}), b = b_store.permute({1, 2, 0});
  const std::vector<double> av = values_of(a), bv = values_of(b);  // logical order
  for (const BinaryCase& op : binary_cases()) {
    INFO(op.name);
    const Tensor out = op.fn(a, b);
    REQUIRE(out.shape() == Shape{2, 3, 4});
    CHECK(out.strides() == a.strides());
    const std::vector<double> got = values_of(out);
    for (size_t i = 0; i < got.size(); ++i)
      CHECK(got[i] == Approx(op.truth(av[i], bv[i])).epsilon(1e-15));
  }
  // Differently permuted operands take the general path and give a contiguous result.
  const Tensor c = grad_input({2, 4, 3}, 23).detach().permute({0, 2, 1});
  const Tensor mixed = add(a, c);
  CHECK(mixed.is_contiguous());
  const std::vector<double> cv = values_of(c), mv = values_of(mixed);
  for (size_t i = 0; i < mv.size(); ++i) CHECK(mv[i] == Approx(av[i] + cv[i]).epsilon(1e-15));
}

TEST_CASE("mismatched broadcast shapes throw naming both shapes", "[ops][elementwise][errors]") {
  const Tensor a = zeros({2, 3}), b = zeros({4});
  CHECK_THROWS_AS(add(a, b), Error);
  CHECK_THROWS_WITH(add(a, b), Catch::Contains("[2, 3]") && Catch::Contains("[4]"));
  CHECK_THROWS_WITH(mul(zeros({3, 1, 5}), zeros({2, 4})),
                    Catch::Contains("[3, 1, 5]") && Catch::Contains("[2, 4]"));
  CHECK_THROWS_WITH(where(zeros({3}, TensorOptions{}.with(DType::boolean)), zeros({2}), zeros({2})),
                    Catch::Contains("[3]") && Catch::Contains("[2]"));
}

TEST_CASE("binary ops promote dtypes", "[ops][elementwise]") {
  const Tensor a = ones({2}), b = ones({2}, f64_options());
  CHECK(add(a, b).dtype() == DType::f64);
  CHECK(mul(b, a).dtype() == DType::f64);
  CHECK(add(a, a).dtype() == DType::f32);
}

TEST_CASE("maximum and minimum split the gradient on ties", "[ops][elementwise][grad]") {
  Tensor a = f64_leaf({1, 2, 3}, {3});
  Tensor b = f64_leaf({3, 2, 1}, {3});
  maximum(a, b).backward(f64_tensor({1, 1, 1}, {3}));
  CHECK(values_of(a.grad()) == std::vector<double>{0, 0.5, 1});
  CHECK(values_of(b.grad()) == std::vector<double>{1, 0.5, 0});
  a.set_grad(Tensor());
  b.set_grad(Tensor());
  minimum(a, b).backward(f64_tensor({1, 1, 1}, {3}));
  CHECK(values_of(a.grad()) == std::vector<double>{1, 0.5, 0});
  CHECK(values_of(b.grad()) == std::vector<double>{0, 0.5, 1});
}

TEST_CASE("maximum and minimum propagate NaN", "[ops][elementwise]") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const Tensor a = f64_tensor({nan, 1}, {2}), b = f64_tensor({1, nan}, {2});
  for (const Tensor& out : {maximum(a, b), minimum(a, b)}) {
    const std::vector<double> v = values_of(out);
    CHECK(std::isnan(v[0]));
    CHECK(std::isnan(v[1]));
  }
}

TEST_CASE("unary ops gradients", "[ops][elementwise][grad]") {
  for (const UnaryCase& op : unary_cases()) {
    INFO(op.name);
    SECTION("contiguous " + op.name) {
      const Tensor x = grad_input({3, 5}, 21, op.low, op.high);
      require_gradients([&](const std::vector<Tensor>& in) { return op.fn(in[0]); }, {x});
    }
    SECTION("transposed " + op.name) {
      const Tensor x = grad_input({4, 3}, 22, op.low, op.high);
      require_gradients([&](const std::vector<Tensor>& in) { return op.fn(in[0].t()); }, {x});
    }
    SECTION("strided slice " + op.name) {
      const Tensor x = grad_input({3, 8}, 23, op.low, op.high);
      require_gradients(
          [&](const std::vector<Tensor>& in) { return op.fn(in[0].slice(1, 1, 8, 2)); }, {x});
    }
  }
}

TEST_CASE("unary ops forward matches the standard library", "[ops][elementwise]") {
  for (const UnaryCase& op : unary_cases()) {
    INFO(op.name);
    const Tensor x = grad_input({20}, 31, op.low, op.high).detach();
    const std::vector<double> xv = values_of(x), got = values_of(op.fn(x));
    for (size_t i = 0; i < xv.size(); ++i)
      CHECK(got[i] == Approx(op.truth(xv[i])).epsilon(1e-14).margin(1e-300));
    // f32 results are the f64 ones rounded, up to a few ulps.
    const std::vector<double> got32 = values_of(op.fn(x.to(DType::f32)));
    for (size_t i = 0; i < xv.size(); ++i)
      CHECK(got32[i] == Approx(got[i]).epsilon(1e-6).margin(1e-6));
  }
}

TEST_CASE("unary ops at the kinks follow PyTorch", "[ops][elementwise]") {
  // Gradients at the kink points themselves, as torch defines them.
  Tensor x = f64_leaf({-1, 0, 1}, {3});
  const Tensor g = f64_tensor({1, 1, 1}, {3});
  relu(x).backward(g);
  CHECK(values_of(x.grad()) == std::vector<double>{0, 0, 1});
  x.set_grad(Tensor());
  abs(x).backward(g);
  CHECK(values_of(x.grad()) == std::vector<double>{-1, 0, 1});
  x.set_grad(Tensor());
  hardtanh(x).backward(g);  // zero outside the open interval
  CHECK(values_of(x.grad()) == std::vector<double>{0, 1, 0});
  x.set_grad(Tensor());
  clamp(x, -1, 1).backward(g);  // one on the closed interval
  CHECK(values_of(x.grad()) == std::vector<double>{1, 1, 1});
}

TEST_CASE("where and masked_fill gradients with broadcasting", "[ops][elementwise][grad]") {
  const Tensor cond = f64_tensor({1, 0, 0, 1, 1, 0}, {3, 1, 2}).to(DType::boolean);
  SECTION("where") {
    const Tensor a = grad_input({4, 1}, 41), b = grad_input({2}, 42);
    require_gradients([&](const std::vector<Tensor>& in) { return where(cond, in[0], in[1]); },
                      {a, b});
  }
  SECTION("where with a 0-d branch and a transposed branch") {
    const Tensor a = grad_input({}, 43), b = grad_input({2, 4}, 44);
    require_gradients([&](const std::vector<Tensor>& in) { return where(cond, in[0], in[1].t()); },
                      {a, b});
  }
  SECTION("masked_fill") {
    const Tensor x = grad_input({3, 4, 2}, 45);
    require_gradients([&](const std::vector<Tensor>& in) { return masked_fill(in[0], cond, -7); },
                      {x});
  }
}

TEST_CASE("where and masked_fill forward values", "[ops][elementwise]") {
  const Tensor cond = f64_tensor({1, 0, 1}, {3}).to(DType::boolean);
  const Tensor a = f64_tensor({1, 2, 3, 4, 5, 6}, {2, 3});
  const Tensor b = f64_tensor({-1}, {});
  CHECK(values_of(where(cond, a, b)) == std::vector<double>{1, -1, 3, 4, -1, 6});
  CHECK(values_of(masked_fill(a, cond, 9)) == std::vector<double>{9, 2, 9, 9, 5, 9});
  const Tensor x = a.detach().set_requires_grad(true);
  masked_fill(x, cond, 9).backward(ones({2, 3}, f64_options()));
  CHECK(values_of(x.grad()) == std::vector<double>{0, 1, 0, 0, 1, 0});
  CHECK_THROWS_AS(where(a, a, b), Error);  // the condition must be bool
}

TEST_CASE("comparison ops give bool tensors", "[ops][elementwise]") {
  const Tensor a = f64_tensor({1, 2, 3}, {3});
  const Tensor b = f64_tensor({2, 2, 2}, {3});
  const std::map<std::string, std::vector<double>> expected = {
      {"eq", {0, 1, 0}}, {"ne", {1, 0, 1}}, {"lt", {1, 0, 0}},
      {"le", {1, 1, 0}}, {"gt", {0, 0, 1}}, {"ge", {0, 1, 1}},
  };
  for (const ComparisonCase& op : comparison_cases()) {
    INFO(op.name);
    REQUIRE(expected.count(op.name) == 1);  // a new comparison needs its values written here
    const Tensor out = op.fn(a, b);
    CHECK(out.dtype() == DType::boolean);
    CHECK(!out.requires_grad());
    CHECK(values_of(out) == expected.at(op.name));
  }
  // Broadcast against a 0-d tensor, mixed dtypes, and inputs that require grad.
  const Tensor x = f64_leaf({0.5, 1.5}, {2});
  const Tensor one = full({}, 1.0);
  const Tensor mask = gt(x, one);
  CHECK(mask.dtype() == DType::boolean);
  CHECK(!mask.requires_grad());
  CHECK(values_of(mask) == std::vector<double>{0, 1});
}

TEST_CASE("f32 binary results are close to f64", "[ops][elementwise]") {
  const Tensor a = grad_input({3, 1, 4}, 51).detach(),
               b = grad_input({2, 4}, 52, 0.5, 1.5).detach();
  for (const BinaryCase& op : binary_cases()) {
    INFO(op.name);
    const std::vector<double> ref = values_of(op.fn(a, b));
    const Tensor out32 = op.fn(a.to(DType::f32), b.to(DType::f32));
    CHECK(out32.dtype() == DType::f32);
    const std::vector<double> got = values_of(out32);
    for (size_t i = 0; i < ref.size(); ++i)
      CHECK(got[i] == Approx(ref[i]).epsilon(1e-6).margin(1e-6));
  }
}

TEST_CASE("unary ops reject integer tensors", "[ops][elementwise][errors]") {
  const Tensor idx = i64_tensor({1, 2}, {2});
  CHECK_THROWS_WITH(exp(idx), Catch::Contains("i64"));
  CHECK_THROWS_AS(hardtanh(ones({2}), 1.0, -1.0), Error);
}

TEST_CASE("integer tensors follow torch's arithmetic", "[ops][elementwise]") {
  const Tensor i = i64_tensor({1, 2, -3}, {3});
  SECTION("integer with integer stays exact in i64") {
    const Tensor big = i64_tensor({(int64_t(1) << 40) + 1}, {1});
    CHECK(add(big, i64_tensor({1}, {1})).to_vector<int64_t>() ==
          std::vector<int64_t>{(int64_t(1) << 40) + 2});
    CHECK(mul(i, 3.0).dtype() == DType::i64);
    CHECK(mul(i, 3.0).to_vector<int64_t>() == std::vector<int64_t>{3, 6, -9});
  }
  SECTION("a fractional scalar is not truncated") {
    const Tensor scaled = mul(i, 2.5);
    CHECK(is_floating(scaled.dtype()));
    CHECK(values_of(scaled) == std::vector<double>{2.5, 5, -7.5});
    CHECK(values_of(add(i, 0.5)) == std::vector<double>{1.5, 2.5, -2.5});
    CHECK(values_of(i / 2.0) == std::vector<double>{0.5, 1, -1.5});
  }
  SECTION("div is true division, also by zero") {
    const Tensor q = div(i, i64_tensor({2, 2, 0}, {3}));
    CHECK(is_floating(q.dtype()));
    const std::vector<double> v = values_of(q);
    CHECK(v[0] == 0.5);
    CHECK(v[1] == 1.0);
    CHECK(v[2] == -std::numeric_limits<double>::infinity());
  }
}

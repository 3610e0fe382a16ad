#include <catch2/catch.hpp>

#include "base/error.h"
#include "engine/ops.h"
#include "tests/ops/op_test_util.h"

using namespace sonata;
using namespace sonata::testing;

TEST_CASE("index_select gradients with repeated indices", "[ops][index][grad]") {
  const Tensor index = i64_tensor({2, 0, 2, 3}, {4});
  SECTION("dim 0") {
    const Tensor x = grad_input({4, 3}, 901);
    require_gradients([&](const std::vector<Tensor>& in) { return index_select(in[0], 0, index); },
                      {x});
  }
  SECTION("middle dim") {
    const Tensor x = grad_input({2, 4, 3}, 902);
    require_gradients([&](const std::vector<Tensor>& in) { return index_select(in[0], 1, index); },
                      {x});
  }
  SECTION("last dim of a transposed input") {
    const Tensor x = grad_input({4, 3}, 903);
    require_gradients(
        [&](const std::vector<Tensor>& in) { return index_select(in[0].t(), -1, index); }, {x});
  }
}

TEST_CASE("index_select matches a hand loop", "[ops][index]") {
  const Shape shape{2, 4, 3};
  const Tensor x = grad_input(shape, 904).detach();
  const std::vector<double> xv = values_of(x);
  const std::vector<int64_t> idx{3, 3, 0};
  const Tensor out = index_select(x, 1, i64_tensor(idx, {3}));
  REQUIRE(out.shape() == Shape{2, 3, 3});
  const std::vector<double> got = values_of(out);
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 3; ++j)
      for (int64_t k = 0; k < 3; ++k)
        CHECK(got[size_t(flat_index({2, 3, 3}, {i, j, k}))] ==
              xv[size_t(flat_index(shape, {i, idx[size_t(j)], k}))]);
  // The gradient counts how often each row was picked.
  const Tensor leaf = f64_leaf({1, 2, 3}, {3});
  index_select(leaf, 0, i64_tensor({2, 2, 1, 2}, {4})).backward(ones({4}, f64_options()));
  CHECK(values_of(leaf.grad()) == std::vector<double>{0, 1, 3});
}

TEST_CASE("gather gradients with repeated indices", "[ops][index][grad]") {
  SECTION("dim 1") {
    const Tensor x = grad_input({3, 4}, 911);
    const Tensor index = i64_tensor({0, 0, 3, 1, 2, 1, 3, 3, 3}, {3, 3});
    require_gradients([&](const std::vector<Tensor>& in) { return gather(in[0], 1, index); }, {x});
  }
  SECTION("dim 0 with fewer rows than the input") {
    const Tensor x = grad_input({4, 3}, 912);
    const Tensor index = i64_tensor({3, 0, 0, 1, 1, 2}, {2, 3});
    require_gradients([&](const std::vector<Tensor>& in) { return gather(in[0], 0, index); }, {x});
  }
  SECTION("a transposed input") {
    const Tensor x = grad_input({4, 3}, 913);
    const Tensor index = i64_tensor({0, 3, 3, 2, 1, 0}, {3, 2});
    require_gradients([&](const std::vector<Tensor>& in) { return gather(in[0].t(), 1, index); },
                      {x});
  }
}

TEST_CASE("gather matches a hand loop", "[ops][index]") {
  const Shape shape{2, 3, 4};
  const Tensor x = grad_input(shape, 914).detach();
  const std::vector<double> xv = values_of(x);
  const std::vector<int64_t> idx{0, 3, 3, 1, 0, 2, 2, 2, 1, 1, 0, 3, 0, 0, 1, 2, 3, 2};  // [2,3,3]
  const Tensor out = gather(x, 2, i64_tensor(idx, {2, 3, 3}));
  REQUIRE(out.shape() == Shape{2, 3, 3});
  const std::vector<double> got = values_of(out);
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 3; ++j)
      for (int64_t k = 0; k < 3; ++k) {
        const int64_t at = flat_index({2, 3, 3}, {i, j, k});
        CHECK(got[size_t(at)] == xv[size_t(flat_index(shape, {i, j, idx[size_t(at)]}))]);
      }
}

TEST_CASE("scatter_add gradients in the input and the source", "[ops][index][grad]") {
  SECTION("dim 0 with colliding indices") {
    const Tensor x = grad_input({3, 2}, 921), src = grad_input({4, 2}, 922);
    const Tensor index = i64_tensor({0, 2, 2, 2, 0, 1, 2, 0}, {4, 2});
    require_gradients(
        [&](const std::vector<Tensor>& in) { return scatter_add(in[0], 0, index, in[1]); },
        {x, src});
  }
  SECTION("last dim, non-contiguous source") {
    const Tensor x = grad_input({2, 5}, 923), src = grad_input({3, 2}, 924);
    const Tensor index = i64_tensor({4, 4, 0, 1, 2, 4}, {2, 3});
    require_gradients(
        [&](const std::vector<Tensor>& in) { return scatter_add(in[0], -1, index, in[1].t()); },
        {x, src});
  }
}

TEST_CASE("scatter_add matches a hand loop and leaves the input alone", "[ops][index]") {
  const Tensor x = f64_tensor({1, 2, 3, 4, 5, 6}, {2, 3});
  const Tensor src = f64_tensor({10, 20, 30, 40}, {2, 2});
  const Tensor index = i64_tensor({2, 2, 0, 1}, {2, 2});
  const Tensor out = scatter_add(x, 1, index, src);
  // Row 0: +10 and +20 at column 2; row 1: +30 at column 0, +40 at column 1.
  CHECK(values_of(out) == std::vector<double>{1, 2, 33, 34, 45, 6});
  CHECK(values_of(x) == std::vector<double>{1, 2, 3, 4, 5, 6});
}

TEST_CASE("out-of-range indices throw naming the index", "[ops][index][errors]") {
  const Tensor x = zeros({3, 4}, f64_options());
  CHECK_THROWS_AS(index_select(x, 0, i64_tensor({0, 5}, {2})), Error);
  CHECK_THROWS_WITH(index_select(x, 0, i64_tensor({0, 5}, {2})), Catch::Contains("index 5"));
  CHECK_THROWS_WITH(index_select(x, 1, i64_tensor({-1}, {1})), Catch::Contains("-1"));
  CHECK_THROWS_WITH(gather(x, 1, i64_tensor({0, 1, 7, 0, 0, 0}, {3, 2})),
                    Catch::Contains("index 7"));
  CHECK_THROWS_WITH(
      scatter_add(x, 0, i64_tensor({0, 0, 0, 9}, {1, 4}), zeros({1, 4}, f64_options())),
      Catch::Contains("index 9"));
  CHECK_THROWS_WITH(x.select(0, 3), Catch::Contains("index 3"));
}

TEST_CASE("index ops reject malformed indices", "[ops][index][errors]") {
  const Tensor x = zeros({3, 4}, f64_options());
  CHECK_THROWS_WITH(index_select(x, 0, from_vector(std::vector<double>{0, 1}, {2})),
                    Catch::Contains("i64"));
  CHECK_THROWS_AS(index_select(x, 0, i64_tensor({0, 1}, {1, 2})), Error);
  CHECK_THROWS_AS(gather(x, 1, i64_tensor({0, 1}, {2})), Error);           // rank differs
  CHECK_THROWS_AS(gather(x, 1, i64_tensor({0, 1, 0, 1}, {2, 2})), Error);  // size differs off dim
  CHECK_THROWS_AS(scatter_add(x, 0, i64_tensor({0, 1, 2, 0}, {1, 4}), zeros({1, 4})), Error);
}

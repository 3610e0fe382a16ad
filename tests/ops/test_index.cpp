// index_select (its backward is index_add), gather and scatter_add over the tables in
// tests/cases/index_cases.h: float64 gradient checks and values against loops by the
// definition; then literal values and the one-sentence errors for bad indices.
#include <catch2/catch.hpp>

#include "base/error.h"
#include "engine/ops.h"
#include "tests/cases/index_cases.h"
#include "tests/ops/op_test_util.h"

using namespace sonata;
using namespace sonata::testing;

namespace {

// The multi-index of a row-major flat offset in `shape`.
std::vector<int64_t> unravel(const Shape& shape, int64_t flat) {
  std::vector<int64_t> index(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    index[d] = flat % shape[d];
    flat /= shape[d];
  }
  return index;
}

size_t wrap_dim(int64_t dim, size_t rank) {
  return size_t(dim < 0 ? dim + int64_t(rank) : dim);
}

}  // namespace

TEST_CASE("index_select gradients with repeated indices", "[ops][index][grad]") {
  uint64_t seed = 900;
  for (const IndexSelectCase& test : index_select_cases()) {
    INFO(test.name);
    const Tensor x = grad_input(test.x, ++seed);
    const Tensor index = test.index_tensor();
    require_gradients(
        [&](const std::vector<Tensor>& in) {
          return index_select(test.input_of(in[0]), test.dim, index);
        },
        {x});
  }
}

TEST_CASE("index_select matches a hand loop", "[ops][index]") {
  uint64_t seed = 930;
  for (const IndexSelectCase& test : index_select_cases()) {
    INFO(test.name);
    const Tensor x = test.input_of(grad_input(test.x, ++seed).detach());
    const Shape shape = x.shape();
    const std::vector<double> xv = values_of(x.contiguous());
    const size_t dim = wrap_dim(test.dim, shape.size());
    Shape out_shape = shape;
    out_shape[dim] = int64_t(test.index.size());
    const Tensor out = index_select(x, test.dim, test.index_tensor());
    REQUIRE(out.shape() == out_shape);
    const std::vector<double> got = values_of(out);
    for (int64_t at = 0; at < int64_t(got.size()); ++at) {
      std::vector<int64_t> from = unravel(out_shape, at);
      from[dim] = test.index[size_t(from[dim])];
      CHECK(got[size_t(at)] == xv[size_t(flat_index(shape, from))]);
    }
  }
  // The gradient counts how often each row was picked.
  const Tensor leaf = f64_leaf({1, 2, 3}, {3});
  index_select(leaf, 0, i64_tensor({2, 2, 1, 2}, {4})).backward(ones({4}, f64_options()));
  CHECK(values_of(leaf.grad()) == std::vector<double>{0, 1, 3});
}

TEST_CASE("gather gradients with repeated indices", "[ops][index][grad]") {
  uint64_t seed = 910;
  for (const GatherCase& test : gather_cases()) {
    INFO(test.name);
    const Tensor x = grad_input(test.x, ++seed);
    const Tensor index = test.index_tensor();
    require_gradients(
        [&](const std::vector<Tensor>& in) {
          return gather(test.input_of(in[0]), test.dim, index);
        },
        {x});
  }
}

TEST_CASE("gather matches a hand loop", "[ops][index]") {
  uint64_t seed = 940;
  for (const GatherCase& test : gather_cases()) {
    INFO(test.name);
    const Tensor x = test.input_of(grad_input(test.x, ++seed).detach());
    const Shape shape = x.shape();
    const std::vector<double> xv = values_of(x.contiguous());
    const size_t dim = wrap_dim(test.dim, shape.size());
    const Tensor out = gather(x, test.dim, test.index_tensor());
    REQUIRE(out.shape() == test.index_shape);
    const std::vector<double> got = values_of(out);
    for (int64_t at = 0; at < int64_t(got.size()); ++at) {
      std::vector<int64_t> from = unravel(test.index_shape, at);
      from[dim] = test.index[size_t(at)];
      CHECK(got[size_t(at)] == xv[size_t(flat_index(shape, from))]);
    }
  }
}

TEST_CASE("scatter_add gradients in the input and the source", "[ops][index][grad]") {
  uint64_t seed = 920;
  for (const ScatterAddCase& test : scatter_add_cases()) {
    INFO(test.name);
    const Tensor x = grad_input(test.x, ++seed), src = grad_input(test.src, ++seed);
    const Tensor index = test.index_tensor();
    require_gradients(
        [&](const std::vector<Tensor>& in) {
          return scatter_add(in[0], test.dim, index, test.src_of(in[1]));
        },
        {x, src});
  }
}

TEST_CASE("scatter_add matches a hand loop and leaves the input alone", "[ops][index]") {
  uint64_t seed = 950;
  for (const ScatterAddCase& test : scatter_add_cases()) {
    INFO(test.name);
    const Tensor x = grad_input(test.x, ++seed).detach();
    const Tensor src = test.src_of(grad_input(test.src, ++seed).detach());
    const std::vector<double> xv = values_of(x), sv = values_of(src.contiguous());
    const size_t dim = wrap_dim(test.dim, test.x.size());
    std::vector<double> expected = xv;
    for (int64_t at = 0; at < int64_t(test.index.size()); ++at) {
      std::vector<int64_t> to = unravel(test.index_shape, at);
      to[dim] = test.index[size_t(at)];
      expected[size_t(flat_index(test.x, to))] += sv[size_t(at)];
    }
    const std::vector<double> got = values_of(scatter_add(x, test.dim, test.index_tensor(), src));
    REQUIRE(got.size() == expected.size());
    for (size_t i = 0; i < got.size(); ++i)
      CHECK(got[i] == Approx(expected[i]).epsilon(1e-14).margin(1e-15));
    CHECK(values_of(x) == xv);
  }
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

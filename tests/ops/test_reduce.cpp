#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>

#include "base/error.h"
#include "engine/ops.h"
#include "tests/cases/reduce_cases.h"
#include "tests/ops/op_test_util.h"

using namespace sonata;
using namespace sonata::testing;

namespace {

// A hand loop over a contiguous [2,3,4] tensor: for each kept position, the list of values
// in the reduced dims.
std::vector<std::vector<double>> groups(const std::vector<double>& x, const Shape& shape,
                                        std::vector<int64_t> dims) {
  if (dims.empty())
    for (int64_t d = 0; d < int64_t(shape.size()); ++d) dims.push_back(d);
  for (int64_t& d : dims)
    if (d < 0) d += int64_t(shape.size());
  auto reduced = [&](int64_t d) { return std::find(dims.begin(), dims.end(), d) != dims.end(); };
  Shape kept_shape;
  for (int64_t d = 0; d < int64_t(shape.size()); ++d)
    if (!reduced(d)) kept_shape.push_back(shape[d]);
  std::vector<std::vector<double>> out(size_t(shape_numel(kept_shape)));
  std::vector<int64_t> index(shape.size(), 0);
  for (size_t flat = 0; flat < x.size(); ++flat) {
    std::vector<int64_t> kept_index;
    for (int64_t d = 0; d < int64_t(shape.size()); ++d)
      if (!reduced(d)) kept_index.push_back(index[size_t(d)]);
    out[size_t(flat_index(kept_shape, kept_index))].push_back(x[flat]);
    for (int64_t d = int64_t(shape.size()) - 1; d >= 0; --d) {
      if (++index[size_t(d)] < shape[size_t(d)]) break;
      index[size_t(d)] = 0;
    }
  }
  return out;
}

Shape expected_shape(const Shape& shape, std::vector<int64_t> dims, bool keepdim) {
  if (dims.empty())
    for (int64_t d = 0; d < int64_t(shape.size()); ++d) dims.push_back(d);
  for (int64_t& d : dims)
    if (d < 0) d += int64_t(shape.size());
  Shape out;
  for (int64_t d = 0; d < int64_t(shape.size()); ++d) {
    if (std::find(dims.begin(), dims.end(), d) == dims.end())
      out.push_back(shape[size_t(d)]);
    else if (keepdim)
      out.push_back(1);
  }
  return out;
}

double hand_sum(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s;
}

double hand_var(const std::vector<double>& v, int64_t correction) {
  const double m = hand_sum(v) / double(v.size());
  double s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return s / double(int64_t(v.size()) - correction);
}

}  // namespace

TEST_CASE("sum mean var amax gradients over dims", "[ops][reduce][grad]") {
  const Shape shape{2, 3, 4};
  for (const ReduceDimsCase& c : reduce_dims_cases()) {
    for (bool keepdim : {false, true}) {
      INFO(c.name << (keepdim ? " keepdim" : ""));
      const Tensor x = grad_input(shape, 101);
      for (const ReductionCase& r : reduction_cases()) {
        INFO(r.name);
        require_gradients(
            [&](const std::vector<Tensor>& in) { return r.fn(in[0], c.dims, keepdim); }, {x});
      }
    }
  }
}

TEST_CASE("reductions of non-contiguous inputs", "[ops][reduce][grad]") {
  const Tensor x = grad_input({4, 3, 2}, 102);
  // Permuted so that no dim is contiguous in memory, then reduced.
  auto permuted = [](const Tensor& t) { return t.permute({2, 0, 1}); };
  require_gradients([&](const std::vector<Tensor>& in) { return sum(permuted(in[0]), {1}); }, {x});
  require_gradients(
      [&](const std::vector<Tensor>& in) {
        return mean(permuted(in[0]), {0, 2}, true);
      },
      {x});
  require_gradients([&](const std::vector<Tensor>& in) { return var(permuted(in[0]), {1}, 1); },
                    {x});
  require_gradients([&](const std::vector<Tensor>& in) { return amax(permuted(in[0]), {2}); }, {x});
  require_gradients(
      [&](const std::vector<Tensor>& in) {
        return sum(in[0].slice(0, 0, 4, 2), {0, 2});
      },
      {x});
}

TEST_CASE("reductions forward match hand loops", "[ops][reduce]") {
  const Shape shape{2, 3, 4};
  const Tensor x = grad_input(shape, 103).detach();
  const std::vector<double> xv = values_of(x);
  for (const ReduceDimsCase& c : reduce_dims_cases()) {
    for (bool keepdim : {false, true}) {
      INFO(c.name << (keepdim ? " keepdim" : ""));
      const auto g = groups(xv, shape, c.dims);
      const Shape want = expected_shape(shape, c.dims, keepdim);
      const Tensor s = sum(x, c.dims, keepdim), m = mean(x, c.dims, keepdim),
                   v0 = var(x, c.dims, 0, keepdim), v1 = var(x, c.dims, 1, keepdim),
                   mx = amax(x, c.dims, keepdim);
      for (const Tensor& t : {s, m, v0, v1, mx}) CHECK(t.shape() == want);
      const auto sv = values_of(s), mv = values_of(m), v0v = values_of(v0), v1v = values_of(v1),
                 mxv = values_of(mx);
      for (size_t i = 0; i < g.size(); ++i) {
        const double n = double(g[i].size());
        CHECK(sv[i] == Approx(hand_sum(g[i])).epsilon(1e-13).margin(1e-14));
        CHECK(mv[i] == Approx(hand_sum(g[i]) / n).epsilon(1e-13).margin(1e-14));
        CHECK(v0v[i] == Approx(hand_var(g[i], 0)).epsilon(1e-12));
        CHECK(v1v[i] == Approx(hand_var(g[i], 1)).epsilon(1e-12));
        CHECK(mxv[i] == *std::max_element(g[i].begin(), g[i].end()));
      }
      // f32 agrees with f64 to single precision.
      const auto s32 = values_of(sum(x.to(DType::f32), c.dims, keepdim));
      const auto v32 = values_of(var(x.to(DType::f32), c.dims, 1, keepdim));
      for (size_t i = 0; i < g.size(); ++i) {
        CHECK(s32[i] == Approx(sv[i]).epsilon(1e-5).margin(1e-5));
        CHECK(v32[i] == Approx(v1v[i]).epsilon(1e-5).margin(1e-6));
      }
    }
  }
}

TEST_CASE("var of known values", "[ops][reduce]") {
  // 1..4: mean 2.5, squared deviations sum to 5.
  const Tensor x = f64_tensor({1, 2, 3, 4}, {4});
  CHECK(var(x, {}, 0).item() == Approx(5.0 / 4));
  CHECK(var(x, {}, 1).item() == Approx(5.0 / 3));
  CHECK(var(x).item() == Approx(5.0 / 3));  // unbiased by default, as torch.var
  CHECK_THROWS_AS(var(f64_tensor({1}, {1}), {}, 1), Error);
}

TEST_CASE("amax shares the gradient evenly between ties", "[ops][reduce][grad]") {
  const Tensor x = f64_leaf({1, 3, 3, 2, 2, 2}, {2, 3});
  SECTION("over one dim") {
    const Tensor out = amax(x, {1});
    CHECK(values_of(out) == std::vector<double>{3, 2});
    out.backward(f64_tensor({1, 6}, {2}));
    const std::vector<double> expected{0, 0.5, 0.5, 2, 2, 2};
    const std::vector<double> got = values_of(x.grad());
    for (size_t i = 0; i < expected.size(); ++i) CHECK(got[i] == Approx(expected[i]));
  }
  SECTION("over all dims") {
    amax(x).backward();
    CHECK(values_of(x.grad()) == std::vector<double>{0, 0.5, 0.5, 0, 0, 0});
  }
  SECTION("over dim 0 with keepdim") {
    const Tensor out = amax(x, {0}, true);
    CHECK(out.shape() == Shape{1, 3});
    out.backward(f64_tensor({1, 1, 1}, {1, 3}));
    CHECK(values_of(x.grad()) == std::vector<double>{0, 1, 1, 1, 0, 0});
  }
}

TEST_CASE("max over a dim gives values and indices", "[ops][reduce]") {
  const Tensor x = grad_input({3, 4, 2}, 104);
  for (int64_t dim : {0, 1, 2, -1}) {
    for (bool keepdim : {false, true}) {
      INFO("dim " << dim << (keepdim ? " keepdim" : ""));
      require_gradients(
          [&](const std::vector<Tensor>& in) { return sonata::max(in[0], dim, keepdim).first; },
          {x});
      const auto [values, indices] = sonata::max(x.detach(), dim, keepdim);
      CHECK(indices.dtype() == DType::i64);
      CHECK(values.shape() == indices.shape());
      CHECK(values.shape() == expected_shape(x.shape(), {dim}, keepdim));
      const auto g = groups(values_of(x), x.shape(), {dim});
      const auto vv = values_of(values);
      const auto iv = indices.to_vector<int64_t>();
      for (size_t i = 0; i < g.size(); ++i) {
        const auto best = std::max_element(g[i].begin(), g[i].end());
        CHECK(vv[i] == *best);
        CHECK(iv[i] == best - g[i].begin());
      }
    }
  }
}

TEST_CASE("max returns the first index on ties and routes the gradient there", "[ops][reduce]") {
  const Tensor x = f64_leaf({5, 1, 5, 0, 2, 2, 7, 7}, {2, 4});
  const auto [values, indices] = sonata::max(x, 1);
  CHECK(values_of(values) == std::vector<double>{5, 7});
  CHECK(indices.to_vector<int64_t>() == std::vector<int64_t>{0, 2});
  values.backward(f64_tensor({1, 1}, {2}));
  CHECK(values_of(x.grad()) == std::vector<double>{1, 0, 0, 0, 0, 0, 1, 0});

  const auto [column_values, column_indices] = sonata::max(f64_tensor({3, 3, 1, 4}, {2, 2}), 0);
  CHECK(column_indices.to_vector<int64_t>() == std::vector<int64_t>{0, 1});
}

TEST_CASE("sum_to reduces a broadcast gradient", "[ops][reduce][grad]") {
  const Tensor x = grad_input({2, 3, 4}, 105);
  for (const Shape& target : sum_to_targets()) {
    INFO(shape_str(target));
    require_gradients([&](const std::vector<Tensor>& in) { return sum_to(in[0], target); }, {x});
    const Tensor out = sum_to(x.detach(), target);
    CHECK(out.shape() == target);
  }
  // Written-out: [[1,2],[3,4]] to [2] sums the rows' columns, to [2,1] the rows.
  const Tensor m = f64_tensor({1, 2, 3, 4}, {2, 2});
  CHECK(values_of(sum_to(m, {2})) == std::vector<double>{4, 6});
  CHECK(values_of(sum_to(m, {2, 1})) == std::vector<double>{3, 7});
}

TEST_CASE("reductions reject bad dims", "[ops][reduce][errors]") {
  const Tensor x = zeros({2, 3});
  CHECK_THROWS_WITH(sum(x, {2}), Catch::Contains("dim 2"));
  CHECK_THROWS_AS(sum(x, {1, -1}), Error);  // the same dim twice
  CHECK_THROWS_AS(sonata::max(x, -3), Error);
}

// max_pool2d and adaptive_avg_pool2d against independent loops written here, float64
// gradient checks (tie-free inputs, so the max has no kinks), tie/NaN rules and errors.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <vector>

#include "engine/ops/pool.h"
#include "tests/cases/pool_cases.h"
#include "tests/ops/op_test_util.h"

using namespace sonata;
using namespace sonata::testing;

namespace {

using Pair = std::array<int64_t, 2>;

int64_t expected_pooled_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil) {
  const double span = double(in + 2 * p - d * (k - 1) - 1) / double(s);
  int64_t out = int64_t(ceil ? std::ceil(span) : std::floor(span)) + 1;
  if (ceil && (out - 1) * s >= in + p) --out;
  return out;
}

// Values and first-maximum indices by the definition.
void direct_max_pool(const std::vector<double>& x, const Shape& xs, const MaxPoolCase& c,
                     std::vector<double>& values, std::vector<int64_t>& indices, Shape& out) {
  const int64_t planes = xs[0] * xs[1], h = xs[2], w = xs[3];
  const int64_t ho =
      expected_pooled_size(h, c.kernel[0], c.stride[0], c.padding[0], c.dilation[0], c.ceil_mode);
  const int64_t wo =
      expected_pooled_size(w, c.kernel[1], c.stride[1], c.padding[1], c.dilation[1], c.ceil_mode);
  out = {xs[0], xs[1], ho, wo};
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t i = 0; i < ho; ++i)
      for (int64_t j = 0; j < wo; ++j) {
        double best = -std::numeric_limits<double>::infinity();
        int64_t best_at = -1;
        for (int64_t q = 0; q < c.kernel[0]; ++q)
          for (int64_t r = 0; r < c.kernel[1]; ++r) {
            const int64_t ih = i * c.stride[0] - c.padding[0] + q * c.dilation[0];
            const int64_t iw = j * c.stride[1] - c.padding[1] + r * c.dilation[1];
            if (ih < 0 || ih >= h || iw < 0 || iw >= w) continue;
            const double v = x[size_t(p * h * w + ih * w + iw)];
            if (best_at < 0 || v > best) best = v, best_at = ih * w + iw;
          }
        values.push_back(best);
        indices.push_back(best_at);
      }
}

std::vector<double> direct_adaptive_avg(const std::vector<double>& x, const Shape& xs,
                                        Pair out_size) {
  const int64_t planes = xs[0] * xs[1], h = xs[2], w = xs[3];
  std::vector<double> y;
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t i = 0; i < out_size[0]; ++i)
      for (int64_t j = 0; j < out_size[1]; ++j) {
        const auto h0 = int64_t(std::floor(double(i * h) / double(out_size[0])));
        const auto h1 = int64_t(std::ceil(double((i + 1) * h) / double(out_size[0])));
        const auto w0 = int64_t(std::floor(double(j * w) / double(out_size[1])));
        const auto w1 = int64_t(std::ceil(double((j + 1) * w) / double(out_size[1])));
        double total = 0;
        for (int64_t ih = h0; ih < h1; ++ih)
          for (int64_t iw = w0; iw < w1; ++iw) total += x[size_t(p * h * w + ih * w + iw)];
        y.push_back(total / double((h1 - h0) * (w1 - w0)));
      }
  return y;
}

}  // namespace

TEST_CASE("max_pool2d equals the window maxima and their indices", "[ops][pool]") {
  uint64_t seed = 800;
  for (const MaxPoolCase& c : max_pool_cases()) {
    INFO(c.name);
    const Tensor x = grad_input(c.x, ++seed).detach();
    std::vector<double> values;
    std::vector<int64_t> indices;
    Shape out_shape;
    direct_max_pool(values_of(x), c.x, c, values, indices, out_shape);
    for (DType dtype : {DType::f64, DType::f32}) {
      INFO(dtype_name(dtype));
      const auto [y, index] =
          max_pool2d(x.to(dtype), c.kernel, c.stride, c.padding, c.dilation, c.ceil_mode);
      REQUIRE(y.shape() == out_shape);
      CHECK(index.dtype() == DType::i64);
      CHECK(index.to_vector<int64_t>() == indices);
      const std::vector<double> got = values_of(y);
      for (size_t i = 0; i < values.size(); ++i) CHECK(got[i] == Approx(values[i]).epsilon(1e-7));
    }
  }
}

TEST_CASE("max_pool2d gradients", "[ops][pool][grad]") {
  uint64_t seed = 820;
  for (const MaxPoolCase& c : max_pool_cases()) {
    if (c.large) continue;
    INFO(c.name);
    require_gradients(
        [&](const std::vector<Tensor>& in) {
          return max_pool2d(in[0], c.kernel, c.stride, c.padding, c.dilation, c.ceil_mode).first;
        },
        {grad_input(c.x, ++seed)});
  }
  // [C, H, W] input.
  require_gradients(
      [](const std::vector<Tensor>& in) {
        return max_pool2d(in[0], {2, 2}, {2, 2}).first;
      },
      {grad_input({3, 4, 4}, 830)});
}

TEST_CASE("max_pool2d ties, NaN and gradient routing", "[ops][pool]") {
  // Ties: the first maximum in scan order wins, in the fast path and the general one.
  const Tensor flat = zeros({1, 1, 4, 4}, f64_options());
  CHECK(max_pool2d(flat, {2, 2}, {2, 2}).second.to_vector<int64_t>() ==
        std::vector<int64_t>{0, 2, 8, 10});
  CHECK(max_pool2d(flat, {3, 3}, {1, 1}, {1, 1}).second.to_vector<int64_t>()[5] == 0);
  // A NaN is its window's maximum.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (Pair kernel : {Pair{2, 2}, Pair{3, 3}}) {
    const Tensor x = f64_tensor({1, 5, 2, 3, nan, 0, 1, 2, 9}, {1, 1, 3, 3});
    const auto [y, index] =
        max_pool2d(x, kernel, {2, 2}, {(kernel[0] - 1) / 2, (kernel[1] - 1) / 2});
    CHECK(std::isnan(values_of(y)[0]));
    CHECK(index.to_vector<int64_t>()[0] == 4);
  }
  // The gradient goes to each window's maximum and adds up where windows share it.
  const Tensor x = f64_leaf({1, 2, 0, 3, 9, 4, 0, 1, 2}, {1, 1, 3, 3});
  max_pool2d(x, {2, 2}, {1, 1}).first.backward(f64_tensor({1, 2, 3, 4}, {1, 1, 2, 2}));
  CHECK(values_of(x.grad()) == std::vector<double>{0, 0, 0, 0, 10, 0, 0, 0, 0});
}

TEST_CASE("adaptive_avg_pool2d equals the mean over PyTorch's windows", "[ops][pool]") {
  uint64_t seed = 840;
  for (const auto& [shape, out] : adaptive_avg_pool_cases()) {
    INFO(shape_str(shape) << " -> " << out[0] << "x" << out[1]);
    const Tensor x = grad_input(shape, ++seed);
    const std::vector<double> expected = direct_adaptive_avg(values_of(x), shape, out);
    const Tensor y = adaptive_avg_pool2d(x.detach(), out);
    CHECK(y.shape() == Shape{shape[0], shape[1], out[0], out[1]});
    const std::vector<double> got = values_of(y);
    const std::vector<double> got32 =
        values_of(adaptive_avg_pool2d(x.detach().to(DType::f32), out));
    REQUIRE(got.size() == expected.size());
    for (size_t i = 0; i < got.size(); ++i) {
      CHECK(got[i] == Approx(expected[i]).epsilon(1e-13).margin(1e-14));
      CHECK(got32[i] == Approx(expected[i]).epsilon(1e-6).margin(1e-6));
    }
    require_gradients(
        [&](const std::vector<Tensor>& in) { return adaptive_avg_pool2d(in[0], out); }, {x});
  }
}

TEST_CASE("pooling names the bad input", "[ops][pool][errors]") {
  const Tensor x = zeros({1, 2, 4, 4}, f64_options());
  CHECK_THROWS_WITH(max_pool2d(x, {2, 2}, {2, 2}, {2, 0}),
                    Catch::Contains("padding (2, 0) must be between 0 and half the kernel size"));
  CHECK_THROWS_WITH(max_pool2d(x, {5, 5}, {1, 1}),
                    Catch::Contains("smaller than the dilated kernel"));
  CHECK_THROWS_WITH(max_pool2d(x, {2, 2}, {0, 2}), Catch::Contains("stride (0, 2)"));
  CHECK_THROWS_WITH(max_pool2d(zeros({4, 4}, f64_options()), {2, 2}, {2, 2}),
                    Catch::Contains("[N, C, H, W] or [C, H, W]"));
  CHECK_THROWS_WITH(max_pool2d(x.to(DType::i64), {2, 2}, {2, 2}),
                    Catch::Contains("floating-point"));
  CHECK_THROWS_WITH(adaptive_avg_pool2d(x, {0, 3}), Catch::Contains("output size (0, 3)"));
}

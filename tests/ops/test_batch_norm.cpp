// batch_norm / batch_norm_relu: forward and running-stat updates against hand-written double
// loops, float64 gradient checks of every input in training and evaluation, 2-D to 4-D.
#include <catch2/catch.hpp>

#include <algorithm>

#include <cmath>
#include <string>
#include <vector>

#include "base/error.h"
#include "engine/ops.h"
#include "engine/ops/batch_norm.h"
#include "tests/cases/batch_norm_cases.h"
#include "tests/ops/op_test_util.h"

using namespace sonata;
using namespace sonata::testing;

namespace {

// Per-channel statistics of a contiguous [N, C, *] tensor by hand.
struct HandStats {
  std::vector<double> mean, biased_var, unbiased_var;
};

HandStats hand_stats(const std::vector<double>& x, const Shape& shape) {
  const int64_t n = shape[0], c = shape[1], s = shape_numel(shape) / (n * c);
  HandStats stats;
  for (int64_t ch = 0; ch < c; ++ch) {
    double total = 0;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t k = 0; k < s; ++k) total += x[size_t((i * c + ch) * s + k)];
    const double mean = total / double(n * s);
    double squares = 0;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t k = 0; k < s; ++k) {
        const double d = x[size_t((i * c + ch) * s + k)] - mean;
        squares += d * d;
      }
    stats.mean.push_back(mean);
    stats.biased_var.push_back(squares / double(n * s));
    stats.unbiased_var.push_back(squares / double(n * s - 1));
  }
  return stats;
}

// y by hand from given per-channel mean / var.
std::vector<double> hand_normalise(const std::vector<double>& x, const Shape& shape,
                                   const std::vector<double>& mean, const std::vector<double>& var,
                                   const std::vector<double>& w, const std::vector<double>& b,
                                   bool relu) {
  const int64_t n = shape[0], c = shape[1], s = shape_numel(shape) / (n * c);
  std::vector<double> y(x.size());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t k = 0; k < s; ++k) {
        const size_t at = size_t((i * c + ch) * s + k);
        const double value =
            (x[at] - mean[size_t(ch)]) / std::sqrt(var[size_t(ch)] + 1e-5) * w[size_t(ch)] +
            b[size_t(ch)];
        y[at] = relu ? std::max(value, 0.0) : value;
      }
  return y;
}

void require_close(const std::vector<double>& actual, const std::vector<double>& expected,
                   double tolerance) {
  REQUIRE(actual.size() == expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    INFO("element " << i);
    REQUIRE(actual[i] == Approx(expected[i]).margin(tolerance).epsilon(tolerance));
  }
}

}  // namespace

TEST_CASE("batch_norm training normalises with batch statistics, computed by hand",
          "[ops][batch_norm]") {
  for (const BatchNormCase& test : batch_norm_cases()) {
    INFO(test.name);
    const Shape& shape = test.x;
    const int64_t c = shape[1];
    const Tensor x = grad_input(shape, 701, -2, 3).detach();
    const Tensor w = grad_input({c}, 702, 0.5, 1.5).detach();
    const Tensor b = grad_input({c}, 703, -1, 1).detach();
    Tensor running_mean = grad_input({c}, 704, -1, 1).detach();
    Tensor running_var = grad_input({c}, 705, 0.5, 2).detach();
    const std::vector<double> rm0 = values_of(running_mean), rv0 = values_of(running_var);
    for (bool relu : {false, true}) {
      INFO("relu " << relu);
      running_mean.copy_(f64_tensor(rm0, {c}));
      running_var.copy_(f64_tensor(rv0, {c}));
      const BatchNormOptions options{true, 0.3, 1e-5};
      const Tensor y = relu ? batch_norm_relu(x, w, b, running_mean, running_var, options)
                            : batch_norm(x, w, b, running_mean, running_var, options);
      const HandStats stats = hand_stats(values_of(x), shape);
      require_close(values_of(y),
                    hand_normalise(values_of(x), shape, stats.mean, stats.biased_var, values_of(w),
                                   values_of(b), relu),
                    1e-12);
      const std::vector<double> rm = values_of(running_mean), rv = values_of(running_var);
      for (int64_t ch = 0; ch < c; ++ch) {
        const size_t k = size_t(ch);
        CHECK(rm[k] == Approx(0.7 * rm0[k] + 0.3 * stats.mean[k]).epsilon(1e-13));
        CHECK(rv[k] == Approx(0.7 * rv0[k] + 0.3 * stats.unbiased_var[k]).epsilon(1e-13));
      }
    }
  }
}

TEST_CASE("batch_norm evaluation uses the running statistics and leaves them alone",
          "[ops][batch_norm]") {
  const Shape shape{3, 4, 5};
  const Tensor x = grad_input(shape, 711, -2, 2).detach();
  const Tensor w = grad_input({4}, 712, 0.5, 1.5).detach(), b = grad_input({4}, 713).detach();
  const Tensor rm = grad_input({4}, 714).detach(), rv = grad_input({4}, 715, 0.5, 2).detach();
  const std::vector<double> rm0 = values_of(rm), rv0 = values_of(rv);
  for (bool relu : {false, true}) {
    const BatchNormOptions eval{false, 0.1, 1e-5};
    const Tensor y =
        relu ? batch_norm_relu(x, w, b, rm, rv, eval) : batch_norm(x, w, b, rm, rv, eval);
    require_close(values_of(y),
                  hand_normalise(values_of(x), shape, rm0, rv0, values_of(w), values_of(b), relu),
                  1e-12);
    CHECK(values_of(rm) == rm0);
    CHECK(values_of(rv) == rv0);
  }
}

TEST_CASE("batch_norm without affine parameters or running stats", "[ops][batch_norm]") {
  const Shape shape{4, 2, 3};
  const Tensor x = grad_input(shape, 721, -1, 1).detach();
  const Tensor y = batch_norm(x, Tensor(), Tensor(), Tensor(), Tensor());
  const HandStats stats = hand_stats(values_of(x), shape);
  require_close(
      values_of(y),
      hand_normalise(values_of(x), shape, stats.mean, stats.biased_var, {1, 1}, {0, 0}, false),
      1e-12);
}

TEST_CASE("batch_norm in f32 and with f32 running stats beside f64 data", "[ops][batch_norm]") {
  const Shape shape{4, 3, 6};
  const Tensor x = grad_input(shape, 731, -1, 2).detach();
  const Tensor w = grad_input({3}, 732, 0.5, 1.5).detach(), b = grad_input({3}, 733).detach();
  Tensor rm64 = zeros({3}, f64_options()), rv64 = ones({3}, f64_options());
  Tensor rm32 = zeros({3}), rv32 = ones({3});
  const Tensor y64 = batch_norm(x, w, b, rm64, rv64);
  const Tensor y32 = batch_norm(x.to(DType::f32), w.to(DType::f32), b.to(DType::f32), rm32, rv32);
  CHECK(y32.dtype() == DType::f32);
  require_close(values_of(y32), values_of(y64), 1e-5);
  Tensor rm_mixed = zeros({3}), rv_mixed = ones({3});
  batch_norm(x, w, b, rm_mixed, rv_mixed);  // f64 x, f32 buffers
  CHECK(rm_mixed.dtype() == DType::f32);
  require_close(values_of(rm_mixed), values_of(rm64), 1e-6);
  require_close(values_of(rv_mixed), values_of(rv64), 1e-6);
  Tensor rm_same = zeros({3}, f64_options()), rv_other = ones({3});  // only the var converts
  batch_norm(x, w, b, rm_same, rv_other);
  require_close(values_of(rm_same), values_of(rm64), 1e-15);
  require_close(values_of(rv_other), values_of(rv64), 1e-6);
  require_close(values_of(rm32), values_of(rm64), 1e-6);
  require_close(values_of(rv32), values_of(rv64), 1e-6);
}

TEST_CASE("batch_norm gradients in training and evaluation", "[ops][batch_norm][grad]") {
  uint64_t seed = 740;
  for (const BatchNormCase& test : batch_norm_cases()) {
    if (test.large) continue;
    const Shape& shape = test.x;
    const int64_t c = shape[1];
    const Tensor x = grad_input(shape, ++seed, -2, 2);
    const Tensor w = grad_input({c}, ++seed, 0.5, 1.5), b = grad_input({c}, ++seed);
    const Tensor rm = grad_input({c}, ++seed).detach(),
                 rv = grad_input({c}, ++seed, 0.5, 2).detach();
    for (bool training : {true, false}) {
      for (bool relu : {false, true}) {
        INFO("shape " << shape_str(shape) << " training " << training << " relu " << relu);
        const BatchNormOptions options{training, 0.1, 1e-5};
        require_gradients(
            [&](const std::vector<Tensor>& in) {
              return relu ? batch_norm_relu(in[0], in[1], in[2], rm, rv, options)
                          : batch_norm(in[0], in[1], in[2], rm, rv, options);
            },
            {x, w, b});
      }
    }
  }
}

TEST_CASE("batch_norm's f32 outputs and gradients agree with the f64 ones",
          "[ops][batch_norm][grad]") {
  // The f32 kernels sum each plane in float lanes; every case of the table, the large ones
  // included, with and without the fused ReLU, against the double computation.
  uint64_t seed = 770;
  for (const BatchNormCase& test : batch_norm_cases()) {
    const Shape& shape = test.x;
    const int64_t c = shape[1];
    const std::vector<double> x = values_of(grad_input(shape, ++seed, -2, 2)),
                              w = values_of(grad_input({c}, ++seed, 0.5, 1.5)),
                              b = values_of(grad_input({c}, ++seed)),
                              seed_grad = values_of(grad_input(shape, ++seed));
    for (bool training : {true, false}) {
      for (bool relu : {false, true}) {
        INFO("shape " << shape_str(shape) << " training " << training << " relu " << relu);
        auto run = [&](DType dtype) {
          std::vector<Tensor> leaves{f64_tensor(x, shape).to(dtype), f64_tensor(w, {c}).to(dtype),
                                     f64_tensor(b, {c}).to(dtype)};
          for (Tensor& leaf : leaves) leaf.set_requires_grad(true);
          Tensor rm = zeros({c}, TensorOptions{}.with(dtype)),
                 rv = ones({c}, TensorOptions{}.with(dtype));
          const BatchNormOptions options{training, 0.1, 1e-5};
          const Tensor y = relu ? batch_norm_relu(leaves[0], leaves[1], leaves[2], rm, rv, options)
                                : batch_norm(leaves[0], leaves[1], leaves[2], rm, rv, options);
          y.backward(f64_tensor(seed_grad, shape).to(dtype));
          std::vector<std::vector<double>> values{values_of(y)};
          for (const Tensor& leaf : leaves) values.push_back(values_of(leaf.grad()));
          return values;
        };
        const auto expected = run(DType::f64), actual = run(DType::f32);
        for (size_t i = 0; i < expected.size(); ++i) {
          INFO("output 0, gradients of x, weight, bias 1-3: " << i);
          double largest = 0;
          for (double e : expected[i]) largest = std::max(largest, std::fabs(e));
          REQUIRE(actual[i].size() == expected[i].size());
          for (size_t k = 0; k < actual[i].size(); ++k)
            CHECK(actual[i][k] == Approx(expected[i][k]).epsilon(1e-4).margin(1e-5 * largest));
        }
      }
    }
  }
}

TEST_CASE("batch_norm gradients without affine parameters", "[ops][batch_norm][grad]") {
  const Tensor x = grad_input({3, 2, 4}, 751, -2, 2);
  require_gradients(
      [](const std::vector<Tensor>& in) {
        return batch_norm(in[0], Tensor(), Tensor(), Tensor(), Tensor());
      },
      {x});
}

TEST_CASE("batch_norm in evaluation scales the gradient by weight / sqrt(var + eps)",
          "[ops][batch_norm][grad]") {
  Tensor x = grad_input({2, 2, 3}, 761);
  const Tensor w = f64_tensor({2, -0.5}, {2}), rm = f64_tensor({0.3, -1}, {2});
  const Tensor rv = f64_tensor({4, 0.25}, {2});
  x.set_grad(Tensor());
  sum(batch_norm(x, w, Tensor(), rm, rv, {false, 0.1, 1e-5})).backward();
  const std::vector<double> g = values_of(x.grad());
  for (size_t i = 0; i < g.size(); ++i) {
    const size_t ch = (i / 3) % 2;
    CHECK(g[i] == Approx(values_of(w)[ch] / std::sqrt(values_of(rv)[ch] + 1e-5)).epsilon(1e-14));
  }
}

TEST_CASE("batch_norm rejects bad inputs with one sentence", "[ops][batch_norm]") {
  const Tensor x = zeros({4, 3, 2});
  const Tensor c3 = ones({3}), c2 = ones({2});
  auto message = [](auto&& call) {
    try {
      call();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK_THAT(message([&] { batch_norm(x, c2, c3, c3, c3); }),
             Catch::Contains("weight must have shape [3]"));
  CHECK_THAT(message([&] {
               batch_norm(x, c3, c3, Tensor(), Tensor(), {false, 0.1, 1e-5});
             }),
             Catch::Contains("evaluation mode needs running_mean"));
  CHECK_THAT(message([&] {
               batch_norm(zeros({1, 3}), c3, c3, c3, c3);
             }),
             Catch::Contains("more than one value per channel"));
  CHECK_THAT(message([&] { batch_norm(zeros({4}), Tensor(), Tensor(), Tensor(), Tensor()); }),
             Catch::Contains("[N, C, *]"));
  CHECK_THAT(message([&] { batch_norm(x, c3, c3, c3, Tensor()); }),
             Catch::Contains("given together"));
}

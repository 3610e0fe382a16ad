#include <catch2/catch.hpp>

#include <cmath>
#include <utility>

#include "engine/ops.h"
#include "tests/cases/softmax_cases.h"
#include "tests/ops/op_test_util.h"

using namespace sonata;
using namespace sonata::testing;

TEST_CASE("softmax and log_softmax gradients over every dim", "[ops][softmax][grad]") {
  const Tensor x = grad_input({3, 4, 2}, 601, -2, 2);
  for (int64_t dim : softmax_dims()) {
    INFO("dim " << dim);
    for (const SoftmaxCase& op : softmax_cases()) {
      INFO(op.name);
      require_gradients([&](const std::vector<Tensor>& in) { return op.fn(in[0], dim); }, {x});
    }
  }
}

TEST_CASE("softmax and log_softmax in f32 agree with f64, gradients included",
          "[ops][softmax][grad]") {
  // The f32 kernels work in float lanes. Rows of 29 (CTC's classes: vector bodies and
  // tails) and 40, every dim, and values 100 below their row's peak, whose probabilities
  // underflow: softmax's gradient there must be 0 in f32, not a denormal.
  for (const Shape& shape : {Shape{7, 29}, Shape{3, 40, 5}}) {
    std::vector<double> values = values_of(grad_input(shape, 611, -4, 4));
    values[1] -= 100;
    values[7] -= 100;
    const std::vector<double> seed = values_of(grad_input(shape, 612, -1, 1));
    for (int64_t dim = 0; dim < int64_t(shape.size()); ++dim)
      for (const SoftmaxCase& op : softmax_cases()) {
        INFO(op.name << " over dim " << dim << " of " << shape_str(shape));
        auto run = [&](DType dtype) {
          Tensor x = f64_tensor(values, shape).to(dtype);
          x.set_requires_grad(true);
          const Tensor y = op.fn(x, dim);
          y.backward(f64_tensor(seed, shape).to(dtype));
          return std::make_pair(values_of(y), values_of(x.grad()));
        };
        const auto [y64, g64] = run(DType::f64);
        const auto [y32, g32] = run(DType::f32);
        for (size_t i = 0; i < y64.size(); ++i) {
          CHECK(y32[i] == Approx(y64[i]).epsilon(1e-5).margin(1e-6));
          CHECK(g32[i] == Approx(g64[i]).epsilon(1e-4).margin(1e-5));
          CHECK((g32[i] == 0.0 || std::fabs(g32[i]) >= 1.2e-38));  // no denormal
        }
      }
  }
}

TEST_CASE("softmax of non-contiguous inputs", "[ops][softmax][grad]") {
  const Tensor x = grad_input({5, 3}, 602, -2, 2);
  require_gradients([](const std::vector<Tensor>& in) { return softmax(in[0].t(), -1); }, {x});
  require_gradients([](const std::vector<Tensor>& in) { return log_softmax(in[0].t(), 0); }, {x});
  require_gradients(
      [](const std::vector<Tensor>& in) { return softmax(in[0].slice(0, 0, 5, 2), 1); }, {x});
}

TEST_CASE("softmax equals exp over the sum computed by hand", "[ops][softmax]") {
  const Shape shape{3, 4, 2};
  const Tensor x = grad_input(shape, 603, -3, 3).detach();
  const std::vector<double> xv = values_of(x);
  for (const int64_t dim_as_given : softmax_dims()) {
    INFO("dim " << dim_as_given);
    const int64_t dim = dim_as_given < 0 ? dim_as_given + 3 : dim_as_given;
    const std::vector<double> sm = values_of(softmax(x, dim));
    const std::vector<double> lsm = values_of(log_softmax(x, dim));
    const std::vector<double> sm32 = values_of(softmax(x.to(DType::f32), dim));
    for (int64_t i = 0; i < shape[0]; ++i)
      for (int64_t j = 0; j < shape[1]; ++j)
        for (int64_t k = 0; k < shape[2]; ++k) {
          std::vector<int64_t> at{i, j, k};
          double total = 0, probability_sum = 0;
          for (int64_t r = 0; r < shape[size_t(dim)]; ++r) {
            std::vector<int64_t> other = at;
            other[size_t(dim)] = r;
            total += std::exp(xv[size_t(flat_index(shape, other))]);
            probability_sum += sm[size_t(flat_index(shape, other))];
          }
          const size_t here = size_t(flat_index(shape, at));
          CHECK(sm[here] == Approx(std::exp(xv[here]) / total).epsilon(1e-13));
          CHECK(lsm[here] == Approx(xv[here] - std::log(total)).epsilon(1e-13).margin(1e-13));
          CHECK(probability_sum == Approx(1.0).epsilon(1e-14));
          CHECK(sm32[here] == Approx(sm[here]).epsilon(1e-5).margin(1e-7));
        }
  }
}

TEST_CASE("log_softmax with a huge value stays finite", "[ops][softmax]") {
  for (DType dtype : {DType::f64, DType::f32}) {
    INFO(dtype_name(dtype));
    const Tensor x = f64_tensor({1e4, 0, -1e4, 1}, {1, 4}).to(dtype);
    const std::vector<double> lsm = values_of(log_softmax(x, 1));
    const std::vector<double> sm = values_of(softmax(x, 1));
    for (double v : lsm) CHECK(std::isfinite(v));
    for (double v : sm) CHECK(std::isfinite(v));
    // exp(-1e4) and the others vanish next to exp(1e4): the row is (0, -1e4, -2e4, 1 - 1e4).
    CHECK(lsm[0] == Approx(0.0).margin(1e-12));
    CHECK(lsm[1] == Approx(-1e4));
    CHECK(lsm[2] == Approx(-2e4));
    CHECK(lsm[3] == Approx(1 - 1e4));
    CHECK(sm[0] == Approx(1.0));
    CHECK(sm[1] == 0.0);
  }
  // The gradient stays finite too.
  const Tensor x = f64_leaf({1e4, 0, -1e4}, {3});
  log_softmax(x, 0).backward(f64_tensor({1, 2, 3}, {3}));
  for (double g : values_of(x.grad())) CHECK(std::isfinite(g));
  // d/dx_i sum_j g_j (x_j - lse) = g_i - softmax_i * sum(g) = (1 - 6, 2, 3).
  CHECK(values_of(x.grad())[0] == Approx(-5.0));
}

TEST_CASE("softmax of a 0-d and a one-element dim", "[ops][softmax]") {
  CHECK(softmax(f64_tensor({3.5}, {}), 0).item() == 1.0);
  CHECK(log_softmax(f64_tensor({3.5, -2}, {2, 1}), 1).to_vector<double>() ==
        std::vector<double>{0, 0});
}

TEST_CASE("log_softmax of equal huge values keeps the digits of log(2)", "[ops][softmax]") {
  // Each row is two equal scores, so every log-probability is -log(2) whatever the scale;
  // x - (max + log(sum)) would round log(2) to the spacing of the max (5e-7 at 1e10 in double).
  for (DType dtype : {DType::f64, DType::f32}) {
    INFO(dtype_name(dtype));
    const Tensor x = f64_tensor({1e4, 1e4, 1e8, 1e8, 1e10, 1e10, -1e10, -1e10}, {4, 2}).to(dtype);
    const double tolerance = dtype == DType::f64 ? 1e-15 : 1e-7;
    // Along rows, then down the columns of the transposed copy (the strided layout).
    for (const auto& [input, dim] : {std::pair{x, int64_t(1)}, {x.t().contiguous(), int64_t(0)}}) {
      for (double v : values_of(log_softmax(input, dim)))
        CHECK(v == Approx(-std::log(2.0)).epsilon(tolerance));
      for (double v : values_of(softmax(input, dim))) CHECK(v == Approx(0.5).epsilon(tolerance));
    }
  }
}

// cross_entropy / nll_loss: values against std::exp / std::log loops and float64 gradient
// checks over the table in tests/cases/cross_entropy_cases.h (reductions, class weights,
// ignore_index and label smoothing, 2-D to 4-D logits), and the named unbatched, bad-target and
// huge-logit cases.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "base/error.h"
#include "engine/ops.h"
#include "engine/ops/loss.h"
#include "tests/cases/cross_entropy_cases.h"
#include "tests/ops/op_test_util.h"
#include "tests/support/error_of.h"

using namespace sonata;
using namespace sonata::testing;

namespace {

// The loss by hand over [N, C, inner] logits; returns per-position losses and fills the sum
// of the target weights of non-ignored positions.
std::vector<double> hand_losses(const std::vector<double>& z, int64_t n, int64_t c, int64_t inner,
                                const std::vector<int64_t>& target,
                                const std::vector<double>& weight, int64_t ignore, double smoothing,
                                double& weight_sum) {
  std::vector<double> out;
  weight_sum = 0;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t k = 0; k < inner; ++k) {
      const int64_t t = target[size_t(i * inner + k)];
      if (t == ignore) {
        out.push_back(0);
        continue;
      }
      auto at = [&](int64_t cls) { return z[size_t((i * c + cls) * inner + k)]; };
      double total = 0;
      for (int64_t cls = 0; cls < c; ++cls) total += std::exp(at(cls));
      auto w = [&](int64_t cls) { return weight.empty() ? 1.0 : weight[size_t(cls)]; };
      double smooth = 0;
      for (int64_t cls = 0; cls < c; ++cls) smooth += -w(cls) * std::log(std::exp(at(cls)) / total);
      const double nll = -w(t) * std::log(std::exp(at(t)) / total);
      out.push_back((1 - smoothing) * nll + smoothing / double(c) * smooth);
      weight_sum += w(t);
    }
  return out;
}

double reduce_by_hand(const std::vector<double>& losses, double weight_sum, Reduction reduction) {
  double total = 0;
  for (double l : losses) total += l;
  return reduction == Reduction::sum ? total : total / weight_sum;
}

// visit(weighted, ignore_index, smoothing, reduction) for every setting of the loss the
// table's cases run under, each under an INFO that names it.
template <typename Visit>
void for_each_setting(const CrossEntropyCase& test, Visit visit) {
  for (bool weighted : {false, true})
    for (int64_t ignore : kIgnoreIndices)
      for (double smoothing : kLabelSmoothings)
        for (Reduction reduction : kLossReductions) {
          INFO(test.name << ": weighted " << weighted << " ignore_index " << ignore << " smoothing "
                         << smoothing << " reduction " << int(reduction));
          visit(weighted, ignore, smoothing, reduction);
        }
}

}  // namespace

TEST_CASE("cross_entropy equals the loss computed by hand", "[ops][cross_entropy]") {
  for (const CrossEntropyCase& test : cross_entropy_cases()) {
    const int64_t n = test.logits[0], c = test.classes();
    const int64_t inner = shape_numel(test.logits) / (n * c);
    const Tensor logits = test.logits_of(grad_input(test.input_shape(), 801, -3, 3).detach());
    const std::vector<double> z = values_of(logits);
    for_each_setting(
        test, [&](bool weighted, int64_t ignore, double smoothing, Reduction reduction) {
          const std::vector<double> w_used = weighted ? class_weights(c) : std::vector<double>{};
          const Tensor w = weighted ? class_weight_tensor(c) : Tensor();
          const Tensor target = test.target_tensor(ignore);
          double weight_sum = 0;
          const std::vector<double> expected = hand_losses(
              z, n, c, inner, test.target_values(ignore), w_used, ignore, smoothing, weight_sum);
          const Tensor loss = cross_entropy(logits, target, w, {reduction, ignore, smoothing});
          if (reduction == Reduction::none) {
            CHECK(loss.shape() == test.target_shape());
            const std::vector<double> actual = values_of(loss);
            for (size_t i = 0; i < expected.size(); ++i)
              CHECK(actual[i] == Approx(expected[i]).epsilon(1e-12).margin(1e-14));
          } else {
            CHECK(loss.dim() == 0);
            CHECK(loss.item() ==
                  Approx(reduce_by_hand(expected, weight_sum, reduction)).epsilon(1e-12));
          }
          const Tensor loss32 =
              cross_entropy(logits.to(DType::f32), target, weighted ? w.to(DType::f32) : Tensor(),
                            {reduction, ignore, smoothing});
          CHECK(loss32.dtype() == DType::f32);
          const std::vector<double> a = values_of(loss32), e = values_of(loss);
          for (size_t i = 0; i < a.size(); ++i)
            CHECK(a[i] == Approx(e[i]).epsilon(1e-5).margin(1e-6));
        });
  }
}

TEST_CASE("cross_entropy of one unbatched sample and a custom ignore_index",
          "[ops][cross_entropy]") {
  const Tensor logits = f64_tensor({1.0, -2.0, 0.5}, {3});
  const Tensor target = i64_tensor({2}, {});
  const double total = std::exp(1.0) + std::exp(-2.0) + std::exp(0.5);
  CHECK(cross_entropy(logits, target).item() == Approx(-std::log(std::exp(0.5) / total)));
  // ignore_index inside the class range: that class is skipped, here leaving nothing (NaN).
  CHECK(std::isnan(cross_entropy(logits, target, Tensor(), {Reduction::mean, 2, 0.0}).item()));
  CHECK(cross_entropy(logits, target, Tensor(), {Reduction::sum, 2, 0.0}).item() == 0.0);
}

TEST_CASE("cross_entropy gradients over reductions, weights, ignore_index and smoothing",
          "[ops][cross_entropy][grad]") {
  for (const CrossEntropyCase& test : cross_entropy_cases()) {
    if (test.large) continue;
    const Tensor input = grad_input(test.input_shape(), 811, -2, 2);
    for_each_setting(test, [&](bool weighted, int64_t ignore, double smoothing,
                               Reduction reduction) {
      const Tensor w = weighted ? class_weight_tensor(test.classes()) : Tensor();
      const Tensor target = test.target_tensor(ignore);
      require_gradients(
          [&](const std::vector<Tensor>& in) {
            return cross_entropy(test.logits_of(in[0]), target, w, {reduction, ignore, smoothing});
          },
          {input});
    });
  }
}

TEST_CASE("cross_entropy's f32 gradient agrees with the f64 one", "[ops][cross_entropy][grad]") {
  // The f32 kernels take their exponentials in float (twice the vector lanes); every case of
  // the table, the large ones included, against the double computation.
  for (const CrossEntropyCase& test : cross_entropy_cases()) {
    const std::vector<double> input = values_of(grad_input(test.input_shape(), 831, -4, 4));
    for_each_setting(
        test, [&](bool weighted, int64_t ignore, double smoothing, Reduction reduction) {
          const Tensor w = weighted ? class_weight_tensor(test.classes()) : Tensor();
          const Tensor target = test.target_tensor(ignore);
          auto gradient = [&](DType dtype) {
            Tensor leaf = f64_tensor(input, test.input_shape()).to(dtype);
            leaf.set_requires_grad(true);
            const Tensor loss =
                cross_entropy(test.logits_of(leaf), target, w.defined() ? w.to(dtype) : Tensor(),
                              {reduction, ignore, smoothing});
            sum(loss).backward();
            return values_of(leaf.grad());
          };
          const std::vector<double> expected = gradient(DType::f64);
          const std::vector<double> actual = gradient(DType::f32);
          REQUIRE(actual.size() == expected.size());
          double largest = 0;
          for (double e : expected) largest = std::max(largest, std::fabs(e));
          for (size_t i = 0; i < actual.size(); ++i)
            CHECK(actual[i] == Approx(expected[i]).epsilon(1e-5).margin(1e-6 * largest));
        });
  }
}

TEST_CASE("cross_entropy's gradient is zero, not denormal, where a probability underflows",
          "[ops][cross_entropy][grad]") {
  // Logits 100 and 200 below the peak: their probabilities are below the smallest normal
  // float, so their gradient is 0 in f32 (denormals would slow every layer beneath).
  for (DType dtype : {DType::f32, DType::f64}) {
    INFO(dtype_name(dtype));
    Tensor logits = f64_tensor({50.0, -50.0, -150.0, 0.0, 0.0, 0.0}, {2, 3}).to(dtype);
    logits.set_requires_grad(true);
    cross_entropy(logits, i64_tensor({0, 1}, {2})).backward();
    const std::vector<double> grad = values_of(logits.grad());
    for (double g : grad) CHECK((g == 0.0 || std::fabs(g) >= 1e-300));
    if (dtype == DType::f32) {
      CHECK(grad[1] == 0.0);
      CHECK(grad[2] == 0.0);
    }
    CHECK(grad[0] == Approx(0.0).margin(1e-7));
    CHECK(grad[4] == Approx(-1.0 / 3).epsilon(1e-6));
  }
}

TEST_CASE("nll_loss on log_softmax equals cross_entropy, with its own gradient",
          "[ops][cross_entropy][grad]") {
  for (const CrossEntropyCase& test : cross_entropy_cases()) {
    const Tensor logits = test.logits_of(grad_input(test.input_shape(), 821, -2, 2));
    const Tensor log_probs = grad_input(test.input_shape(), 822, -3, -0.1);
    for (bool weighted : {false, true}) {
      const Tensor w = weighted ? class_weight_tensor(test.classes()) : Tensor();
      for (int64_t ignore : kIgnoreIndices) {
        const Tensor target = test.target_tensor(ignore);
        for (Reduction reduction : kLossReductions) {
          INFO(test.name << ": weighted " << weighted << " ignore_index " << ignore << " reduction "
                         << int(reduction));
          const std::vector<double> nll =
              values_of(nll_loss(log_softmax(logits, 1), target, w, {reduction, ignore}));
          const std::vector<double> ce =
              values_of(cross_entropy(logits, target, w, {reduction, ignore, 0.0}));
          REQUIRE(nll.size() == ce.size());
          for (size_t i = 0; i < nll.size(); ++i) CHECK(nll[i] == Approx(ce[i]).epsilon(1e-13));
          if (test.large) continue;
          require_gradients(
              [&](const std::vector<Tensor>& in) {
                return nll_loss(test.logits_of(in[0]), target, w, {reduction, ignore});
              },
              {log_probs});
        }
      }
    }
  }
}

TEST_CASE("cross_entropy rejects bad targets naming the class and position",
          "[ops][cross_entropy]") {
  const Tensor logits = zeros({2, 3, 2});
  CHECK_THAT(error_of([&] {
               cross_entropy(logits, i64_tensor({0, 1, 3, 2}, {2, 2}));
             }),
             Catch::Contains("target[1, 0] = 3 is not a class index in [0, 3)"));
  CHECK_THAT(error_of([&] {
               cross_entropy(logits, i64_tensor({0, 1}, {2}));
             }),
             Catch::Contains("target must have shape [2, 2]"));
  CHECK_THAT(error_of([&] {
               cross_entropy(logits, zeros({2, 2}));
             }),
             Catch::Contains("i64 class indices"));
  CHECK_THAT(error_of([&] {
               cross_entropy(logits, zeros({2, 2}, TensorOptions{}.with(DType::i64)), ones({2}));
             }),
             Catch::Contains("weight must have shape [3]"));
  CHECK_THAT(error_of([&] {
               cross_entropy(logits, zeros({2, 2}, TensorOptions{}.with(DType::i64)), Tensor(),
                             {Reduction::mean, -100, 1.5});
             }),
             Catch::Contains("label_smoothing = 1.5"));
}

TEST_CASE("cross_entropy of equal huge logits keeps the digits of p and the loss",
          "[ops][cross_entropy]") {
  // Two equal logits: loss = log(2) and the target's gradient p - 1 = -0.5 at any scale. A
  // saved log-sum-exp of max + log(2) rounds in f32 (10000.6934 at 1e4: p off by 2e-4, and at
  // 1e10 it is the max itself, p = 1), and in double at 1e10 the loss is off by 5e-7.
  for (DType dtype : {DType::f64, DType::f32}) {
    INFO(dtype_name(dtype));
    const double tolerance = dtype == DType::f64 ? 1e-15 : 1e-6;
    for (double scale : {1e4, 1e10, -1e10}) {
      INFO("logits " << scale);
      Tensor logits = f64_tensor({scale, scale}, {1, 2}).to(dtype);
      logits.set_requires_grad(true);
      const Tensor loss = cross_entropy(logits, i64_tensor({0}, {1}));
      CHECK(values_of(loss)[0] == Approx(std::log(2.0)).epsilon(tolerance));
      loss.backward();
      const std::vector<double> grad = values_of(logits.grad());
      CHECK(grad[0] == Approx(-0.5).epsilon(tolerance));
      CHECK(grad[1] == Approx(0.5).epsilon(tolerance));
    }
  }
}

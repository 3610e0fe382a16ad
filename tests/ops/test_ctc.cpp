// CTC loss on the CPU: values against a brute-force sum over every alignment path, float64
// gradient checks through log_softmax, the fused-from-logits variant against the composed
// one, a long utterance, and the one-sentence errors for bad inputs.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <string>

#include "base/error.h"
#include "engine/autograd/grad_mode.h"
#include "engine/ops.h"
#include "engine/ops/ctc.h"
#include "engine/random.h"
#include "tests/cases/ctc_cases.h"
#include "tests/ops/op_test_util.h"

using namespace sonata;
using namespace sonata::testing;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// -log of the summed probability of every length-T_n path over C symbols that collapses
// (merge repeats, then drop blanks) to the target: the definition, with no recursion.
double brute_force_nll(const std::vector<double>& lp, const CtcCase& c, int64_t n) {
  const int64_t frames = c.input_lengths[size_t(n)];
  int64_t paths = 1;
  for (int64_t t = 0; t < frames; ++t) paths *= c.classes;
  double total = 0;
  std::vector<int64_t> path(static_cast<size_t>(frames));
  for (int64_t index = 0; index < paths; ++index) {
    int64_t rest = index;
    double log_p = 0;
    for (int64_t t = 0; t < frames; ++t) {
      path[size_t(t)] = rest % c.classes;
      rest /= c.classes;
      log_p += lp[size_t((t * c.batch() + n) * c.classes + path[size_t(t)])];
    }
    std::vector<int64_t> collapsed;
    for (int64_t t = 0; t < frames; ++t) {
      const int64_t symbol = path[size_t(t)];
      if (symbol != c.blank && (t == 0 || path[size_t(t - 1)] != symbol))
        collapsed.push_back(symbol);
    }
    if (collapsed == c.targets[size_t(n)]) total += std::exp(log_p);
  }
  return total == 0 ? kInf : -std::log(total);
}

Tensor random_log_probs(const CtcCase& c, uint64_t seed) {
  return log_softmax(grad_input({c.frames, c.batch(), c.classes}, seed, -2, 2).detach(), 2);
}

void require_error_naming(const std::function<void()>& call, const std::string& name) {
  try {
    call();
  } catch (const Error& error) {
    INFO(error.what());
    CHECK(std::string(error.what()).find(name) != std::string::npos);
    return;
  }
  FAIL("no sonata::Error naming " << name);
}

}  // namespace

TEST_CASE("ctc_loss equals the brute-force sum over alignments", "[ops][ctc]") {
  for (const CtcCase& c : {blank_zero_case(), blank_last_case()}) {
    INFO("blank " << c.blank);
    const Tensor lp = random_log_probs(c, 700 + uint64_t(c.blank));
    const std::vector<double> lp_values = values_of(lp);
    const CtcOptions options = ctc_options(c, Reduction::none);
    const std::vector<double> padded =
        values_of(ctc_loss(lp, c.padded_targets(c.blank), c.input_lengths_tensor(),
                           c.target_lengths_tensor(), options));
    const std::vector<double> concatenated =
        values_of(ctc_loss(lp, c.concatenated_targets(), c.input_lengths_tensor(),
                           c.target_lengths_tensor(), options));
    const std::vector<double> single =
        values_of(ctc_loss(lp.to(DType::f32), c.padded_targets(c.blank), c.input_lengths_tensor(),
                           c.target_lengths_tensor(), options));
    for (int64_t n = 0; n < c.batch(); ++n) {
      INFO("sample " << n);
      const double expected = brute_force_nll(lp_values, c, n);
      if (std::isinf(expected)) {
        CHECK(padded[size_t(n)] == kInf);
        CHECK(single[size_t(n)] == kInf);
      } else {
        CHECK(padded[size_t(n)] == Approx(expected).epsilon(1e-12).margin(1e-12));
        CHECK(single[size_t(n)] == Approx(expected).epsilon(1e-6).margin(1e-6));
      }
      CHECK(concatenated[size_t(n)] == padded[size_t(n)]);
    }
  }
}

TEST_CASE("ctc_loss reductions: sum, and mean over target lengths clamped to 1", "[ops][ctc]") {
  const CtcCase c = ragged_case(0);
  const Tensor lp = random_log_probs(c, 710);
  auto loss = [&](Reduction reduction) {
    return ctc_loss(lp, c.padded_targets(0), c.input_lengths_tensor(), c.target_lengths_tensor(),
                    ctc_options(c, reduction));
  };
  const std::vector<double> each = values_of(loss(Reduction::none));
  double total = 0, mean_total = 0;
  for (int64_t n = 0; n < c.batch(); ++n) {
    total += each[size_t(n)];
    mean_total += each[size_t(n)] / double(std::max<size_t>(c.targets[size_t(n)].size(), 1));
  }
  CHECK(loss(Reduction::sum).item() == Approx(total).epsilon(1e-14));
  CHECK(loss(Reduction::mean).item() == Approx(mean_total / double(c.batch())).epsilon(1e-14));
  CHECK(loss(Reduction::mean).dim() == 0);
}

TEST_CASE("ctc_loss accepts i32 targets and lengths", "[ops][ctc]") {
  const CtcCase c = ragged_case(0);
  const Tensor lp = random_log_probs(c, 711);
  const CtcOptions options = ctc_options(c, Reduction::none);
  const Tensor wide = ctc_loss(lp, c.padded_targets(0), c.input_lengths_tensor(),
                               c.target_lengths_tensor(), options);
  const Tensor narrow =
      ctc_loss(lp, c.padded_targets(0).to(DType::i32), c.input_lengths_tensor().to(DType::i32),
               c.target_lengths_tensor().to(DType::i32), options);
  CHECK(values_of(wide) == values_of(narrow));
}

TEST_CASE("ctc_loss zero_infinity zeroes infeasible samples and their gradients",
          "[ops][ctc][grad]") {
  // Sample 1 needs 3 labels + 2 repeats = 5 frames and has 4.
  const CtcCase c{4, 3, 0, {4, 4}, {{1, 2}, {1, 1, 1}}};
  const Tensor x = grad_input({4, 2, 3}, 720, -2, 2);
  auto loss = [&](const Tensor& in, Reduction reduction, bool zero_infinity) {
    return ctc_loss(log_softmax(in, 2), c.padded_targets(0), c.input_lengths_tensor(),
                    c.target_lengths_tensor(), ctc_options(c, reduction, zero_infinity));
  };
  const std::vector<double> plain = values_of(loss(x.detach(), Reduction::none, false));
  CHECK(std::isfinite(plain[0]));
  CHECK(plain[1] == kInf);
  const Tensor lp = log_softmax(x.detach(), 2).set_requires_grad(true);
  const Tensor zeroed = ctc_loss(lp, c.padded_targets(0), c.input_lengths_tensor(),
                                 c.target_lengths_tensor(), ctc_options(c, Reduction::sum, true));
  CHECK(zeroed.item() == Approx(plain[0]).epsilon(1e-14));
  zeroed.backward();
  const std::vector<double> grad = values_of(lp.grad());
  double feasible_norm = 0;
  for (int64_t t = 0; t < 4; ++t)
    for (int64_t k = 0; k < 3; ++k) {
      CHECK(grad[size_t(flat_index({4, 2, 3}, {t, 1, k}))] == 0.0);
      feasible_norm += std::abs(grad[size_t(flat_index({4, 2, 3}, {t, 0, k}))]);
    }
  CHECK(feasible_norm > 0.1);
  // Without zero_infinity PyTorch's formula gives NaN for the infeasible sample's frames.
  const Tensor lp2 = log_softmax(x.detach(), 2).set_requires_grad(true);
  ctc_loss(lp2, c.padded_targets(0), c.input_lengths_tensor(), c.target_lengths_tensor(),
           ctc_options(c, Reduction::none))
      .backward(f64_tensor({1, 1}, {2}));
  CHECK(std::isnan(values_of(lp2.grad())[size_t(flat_index({4, 2, 3}, {0, 1, 0}))]));
  for (Reduction reduction : {Reduction::sum, Reduction::mean, Reduction::none})
    require_gradients([&](const std::vector<Tensor>& in) { return loss(in[0], reduction, true); },
                      {x});
}

TEST_CASE("ctc_loss under no-grad computes the same losses and records nothing", "[ops][ctc]") {
  // Without grad the forward skips beta (kernels/common/ctc_plan.h); with grad it runs it in
  // the forward, and the losses (alpha's) must not depend on which.
  const CtcCase c = ragged_case(0);
  const Tensor lp = random_log_probs(c, 725).set_requires_grad(true);
  auto loss = [&] {
    return ctc_loss(lp, c.padded_targets(0), c.input_lengths_tensor(), c.target_lengths_tensor(),
                    ctc_options(c, Reduction::none));
  };
  Tensor evaluation;
  {
    NoGradGuard no_grad;
    evaluation = loss();
  }
  CHECK_FALSE(evaluation.requires_grad());
  const Tensor training = loss();
  CHECK(training.requires_grad());
  CHECK(values_of(evaluation) == values_of(training));
}

TEST_CASE("ctc_loss gradients through log_softmax, every case of the table", "[ops][ctc][grad]") {
  uint64_t seed = 730;
  for (const NamedCtcCase& named : ctc_cases()) {
    const CtcCase& c = named.batch;
    const Tensor x = grad_input({c.frames, c.batch(), c.classes}, seed++, -2, 2);
    // Both target layouts over the reductions, alternating, to keep the suite fast.
    bool padded = seed % 2 == 0;
    for (Reduction reduction : {Reduction::none, Reduction::sum, Reduction::mean}) {
      INFO(named.name << ", reduction " << int(reduction) << ", padded " << padded);
      const Tensor targets = padded ? c.padded_targets(c.blank) : c.concatenated_targets();
      const CtcOptions options = ctc_options(c, reduction, named.zero_infinity);
      require_gradients(
          [&](const std::vector<Tensor>& in) {
            return ctc_loss(log_softmax(in[0], 2), targets, c.input_lengths_tensor(),
                            c.target_lengths_tensor(), options);
          },
          {x});
      padded = !padded;
    }
  }
}

TEST_CASE("ctc_loss_from_logits equals log_softmax then ctc_loss", "[ops][ctc][grad]") {
  const CtcCase c = ragged_case(0);
  for (DType dtype : {DType::f64, DType::f32}) {
    for (Reduction reduction : {Reduction::none, Reduction::sum, Reduction::mean}) {
      INFO(dtype_name(dtype) << ", reduction " << int(reduction));
      const Tensor base = grad_input({c.frames, c.batch(), c.classes}, 740, -3, 3).detach();
      const Tensor composed_in = base.to(dtype).set_requires_grad(true);
      const Tensor fused_in = base.to(dtype).set_requires_grad(true);
      const CtcOptions options = ctc_options(c, reduction);
      const Tensor composed =
          ctc_loss(log_softmax(composed_in, 2), c.padded_targets(0), c.input_lengths_tensor(),
                   c.target_lengths_tensor(), options);
      const Tensor fused =
          ctc_loss_from_logits(fused_in, c.padded_targets(0), c.input_lengths_tensor(),
                               c.target_lengths_tensor(), options);
      const double tolerance = dtype == DType::f64 ? 1e-12 : 1e-5;
      const std::vector<double> a = values_of(composed), b = values_of(fused);
      REQUIRE(a.size() == b.size());
      for (size_t i = 0; i < a.size(); ++i) CHECK(b[i] == Approx(a[i]).epsilon(tolerance));
      const Tensor direction = grad_input(composed.shape(), 741, 0.5, 1.5).detach().to(dtype);
      sum(mul(composed, direction)).backward();
      sum(mul(fused, direction)).backward();
      const std::vector<double> ga = values_of(composed_in.grad()), gb = values_of(fused_in.grad());
      for (size_t i = 0; i < ga.size(); ++i)
        CHECK(gb[i] == Approx(ga[i]).epsilon(tolerance).margin(tolerance));
    }
  }
  const Tensor x = grad_input({c.frames, c.batch(), c.classes}, 742, -2, 2);
  require_gradients(
      [&](const std::vector<Tensor>& in) {
        return ctc_loss_from_logits(in[0], c.concatenated_targets(), c.input_lengths_tensor(),
                                    c.target_lengths_tensor(), ctc_options(c, Reduction::mean));
      },
      {x});
}

TEST_CASE("ctc_loss on a long utterance: T = 2000, L = 300, C = 29", "[ops][ctc]") {
  Generator generator(750, 0);
  CtcCase c{2000, 29, 0, {2000, 1500}, {{}, {}}};
  const Tensor draws = rand({500}, {}, &generator);
  const std::vector<double> u = values_of(draws);
  for (size_t j = 0; j < 300; ++j) c.targets[0].push_back(1 + int64_t(u[j] * 28));
  for (size_t j = 300; j < 500; ++j) c.targets[1].push_back(1 + int64_t(u[j] * 28));
  const Tensor lp64 = random_log_probs(c, 751).set_requires_grad(true);
  const Tensor lp32 = lp64.detach().to(DType::f32).set_requires_grad(true);
  const CtcOptions options = ctc_options(c, Reduction::none);
  const Tensor loss64 = ctc_loss(lp64, c.padded_targets(0), c.input_lengths_tensor(),
                                 c.target_lengths_tensor(), options);
  const Tensor loss32 = ctc_loss(lp32, c.concatenated_targets(), c.input_lengths_tensor(),
                                 c.target_lengths_tensor(), options);
  const std::vector<double> l64 = values_of(loss64), l32 = values_of(loss32);
  for (size_t n = 0; n < 2; ++n) {
    CHECK(std::isfinite(l64[n]));
    CHECK(l64[n] > 0);
    CHECK(l32[n] == Approx(l64[n]).epsilon(1e-6));
  }
  sum(loss64).backward();
  sum(loss32).backward();
  // In exact arithmetic each live frame's gradient sums to 1 - 1 = 0 over the classes
  // (softmax and the posterior are both distributions), and frames past T_n get nothing.
  const std::vector<double> g64 = values_of(lp64.grad()), g32 = values_of(lp32.grad());
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t t = 0; t < c.frames; t += 37) {
      double row = 0, largest = 0;
      for (int64_t k = 0; k < c.classes; ++k) {
        const size_t at = size_t(flat_index({c.frames, 2, c.classes}, {t, n, k}));
        row += g64[at];
        largest = std::max(largest, std::abs(g64[at]));
        CHECK(g32[at] == Approx(g64[at]).margin(1e-5));
      }
      if (t < c.input_lengths[size_t(n)]) {
        CHECK(std::abs(row) < 1e-9);
        CHECK(largest > 0);
      } else {
        CHECK(largest == 0);
      }
    }
}

TEST_CASE("ctc_loss names the bad input", "[ops][ctc]") {
  const CtcCase c = ragged_case(0);
  const Tensor lp = random_log_probs(c, 760);
  const Tensor targets = c.padded_targets(0), il = c.input_lengths_tensor(),
               tl = c.target_lengths_tensor();
  const CtcOptions options;
  auto lengths = [](std::vector<int64_t> values) {
    return from_vector(values, {int64_t(values.size())});
  };
  require_error_naming([&] { ctc_loss(lp.select(1, 0), targets, il, tl, options); }, "log_probs");
  require_error_naming([&] { ctc_loss(lp, targets, il, tl, CtcOptions{4}); }, "blank = 4");
  require_error_naming(
      [&] {
        ctc_loss(lp, targets, lengths({6, 4, 5}), tl, options);
      },
      "input_lengths must have shape [4]");
  require_error_naming(
      [&] {
        ctc_loss(lp, targets, lengths({6, 7, 5, 3}), tl, options);
      },
      "input_lengths[1] = 7 exceeds");
  require_error_naming(
      [&] {
        ctc_loss(lp, targets, lengths({6, 4, -1, 3}), tl, options);
      },
      "input_lengths[2] = -1 is negative");
  require_error_naming(
      [&] {
        ctc_loss(lp, targets, il, lengths({-1, 1, 2, 0}), options);
      },
      "target_lengths[0] = -1 is negative");
  require_error_naming(
      [&] {
        ctc_loss(lp, targets, il, lengths({3, 1, 2, 5}), options);
      },
      "target_lengths[3] = 5 exceeds the padded targets' width 4");
  require_error_naming(
      [&] {
        ctc_loss(lp, lengths({1, 2, 1, 3, 2}), il, tl, options);
      },
      "concatenated targets hold 5 labels but target_lengths sum to 6");
  require_error_naming(
      [&] {
        ctc_loss(lp, lengths({1, 2, 1, 3, 2, 4}), il, tl, options);
      },
      "targets of sample 2 hold label 4 at position 1, outside the 4 classes");
  require_error_naming(
      [&] {
        ctc_loss(lp, lengths({1, 2, 1, 3, 0, 2}), il, tl, options);
      },
      "targets of sample 2 hold the blank label 0 at position 0");
  require_error_naming([&] { ctc_loss(lp, targets.to(DType::f32), il, tl, options); },
                       "targets must be an i64 or i32 tensor");
  require_error_naming([&] { ctc_loss(lp, targets, il.to(DType::f64), tl, options); },
                       "input_lengths must be an i64 or i32 tensor");
  require_error_naming([&] { ctc_loss_from_logits(lp.to(DType::i64), targets, il, tl, options); },
                       "logits");
}

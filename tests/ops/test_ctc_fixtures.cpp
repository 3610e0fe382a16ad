// ctc_loss against PyTorch: cases written by tests/fixtures/make_ctc.py with
// torch.nn.functional.ctc_loss (loss and gradient w.r.t. log_probs), float64 within 1e-9
// relative, float32 within 1e-4.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "engine/ops.h"
#include "engine/ops/ctc.h"
#include "tests/ops/op_test_util.h"
#include "tests/support/text_fixture.h"

using namespace sonata;
using namespace sonata::testing;

namespace {

using Fixture = TextFixture;

Fixture read_fixture(const std::string& name) {
  return read_text_fixture(std::string(SONATA_FIXTURES_DIR) + "/ctc/" + name + ".txt");
}

std::vector<int64_t> integers(const Fixture& f, const std::string& key) {
  std::vector<int64_t> out;
  for (const std::string& word : f.at(key)) out.push_back(std::stoll(word));
  return out;
}

Reduction reduction_of(const std::string& name) {
  if (name == "none") return Reduction::none;
  if (name == "sum") return Reduction::sum;
  return Reduction::mean;
}

void require_close(const std::vector<double>& actual, const std::vector<double>& expected,
                   double rtol, double atol, const char* what) {
  REQUIRE(actual.size() == expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    INFO(what << "[" << i << "]: " << actual[i] << " vs PyTorch " << expected[i]);
    if (std::isnan(expected[i])) {
      CHECK(std::isnan(actual[i]));
    } else if (std::isinf(expected[i])) {
      CHECK(actual[i] == expected[i]);
    } else {
      CHECK(std::abs(actual[i] - expected[i]) <= atol + rtol * std::abs(expected[i]));
    }
  }
}

void check_fixture(const std::string& name) {
  INFO("fixture " << name);
  const Fixture f = read_fixture(name);
  const DType dtype = f.at("dtype")[0] == "f64" ? DType::f64 : DType::f32;
  const std::vector<int64_t> shape = integers(f, "shape");
  const Tensor log_probs = from_vector(fixture_doubles(f, "log_probs"), shape, f64_options())
                               .to(dtype)
                               .set_requires_grad(true);
  const Tensor targets = from_vector(integers(f, "targets"), integers(f, "targets_shape"));
  const std::vector<int64_t> input_lengths = integers(f, "input_lengths");
  const std::vector<int64_t> target_lengths = integers(f, "target_lengths");
  CtcOptions options;
  options.blank = integers(f, "blank")[0];
  options.reduction = reduction_of(f.at("reduction")[0]);
  options.zero_infinity = integers(f, "zero_infinity")[0] != 0;
  const Tensor loss =
      ctc_loss(log_probs, targets, from_vector(input_lengths, {int64_t(input_lengths.size())}),
               from_vector(target_lengths, {int64_t(target_lengths.size())}), options);
  const std::vector<double> weights = fixture_doubles(f, "grad_weights");
  loss.backward(from_vector(weights, loss.shape(), f64_options()).to(loss.dtype()));
  const double rtol = dtype == DType::f64 ? 1e-9 : 1e-4;
  const double atol = dtype == DType::f64 ? 1e-12 : 1e-6;
  require_close(values_of(loss), fixture_doubles(f, "loss"), rtol, atol, "loss");
  require_close(values_of(log_probs.grad()), fixture_doubles(f, "grad"), rtol, atol, "grad");
}

}  // namespace

TEST_CASE("ctc_loss matches PyTorch's fixtures", "[ops][ctc][fixtures]") {
  for (const char* name : {"ragged_f64_none", "concatenated_blank_last_f64_mean", "ragged_f32_sum",
                           "single_frame_f64_mean", "infeasible_f64_none",
                           "infeasible_zero_infinity_f64_mean", "infeasible_zero_infinity_f32_none",
                           "long_260_labels_f64_mean", "long_260_labels_f32_none"})
    check_fixture(name);
}

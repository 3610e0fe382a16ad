// The probe's --op ctc_loss mode against tests/fixtures/make_ctc.py's PyTorch cases, through
// run_probe as the command line calls it: .npy inputs in, "loss" and "grad" out.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "base/error.h"
#include "engine/io/npy.h"
#include "tests/support/text_fixture.h"
#include "tools/probe/probe_run.h"

using namespace sonata;
using namespace sonata::testing;

namespace {

// A folder of its own per process, removed when the test ends.
class ScratchFolder {
 public:
  ScratchFolder()
      : path_(std::filesystem::temp_directory_path() /
              ("sonata_probe_ctc_" + std::to_string(getpid()))) {
    std::filesystem::create_directories(path_);
  }
  ~ScratchFolder() { std::filesystem::remove_all(path_); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

std::vector<int64_t> integers(const TextFixture& f, const std::string& key) {
  std::vector<int64_t> out;
  for (const std::string& word : f.at(key)) out.push_back(std::stoll(word));
  return out;
}

Tensor integer_tensor(const TextFixture& f, const std::string& key) {
  const std::vector<int64_t> values = integers(f, key);
  return from_vector(values, {int64_t(values.size())});
}

bool close(double actual, double expected, double rtol, double atol) {
  if (std::isnan(expected)) return std::isnan(actual);
  if (std::isinf(expected)) return actual == expected;
  return std::abs(actual - expected) <= atol + rtol * std::abs(expected);
}

void check_probe_on_fixture(const std::string& name, const ScratchFolder& scratch) {
  INFO("fixture " << name);
  const TextFixture f =
      read_text_fixture(std::string(SONATA_FIXTURES_DIR) + "/ctc/" + name + ".txt");
  const DType dtype = f.at("dtype")[0] == "f64" ? DType::f64 : DType::f32;
  const std::vector<int64_t> shape = integers(f, "shape");
  ProbeOptions options;
  options.op = "ctc_loss";
  options.log_probs = scratch.file(name + ".lp.npy");
  options.targets = scratch.file(name + ".t.npy");
  options.input_lengths = scratch.file(name + ".il.npy");
  options.target_lengths = scratch.file(name + ".tl.npy");
  options.reduction = f.at("reduction")[0];
  options.blank = integers(f, "blank")[0];
  options.zero_infinity = integers(f, "zero_infinity")[0] != 0;
  save_npy(options.log_probs,
           from_vector(fixture_doubles(f, "log_probs"), shape, TensorOptions{}.with(DType::f64))
               .to(dtype));
  save_npy(options.targets, from_vector(integers(f, "targets"), integers(f, "targets_shape")));
  save_npy(options.input_lengths, integer_tensor(f, "input_lengths"));
  save_npy(options.target_lengths, integer_tensor(f, "target_lengths"));

  const NamedTensors out = run_probe(options);
  REQUIRE(out.size() == 2);
  REQUIRE(out[0].first == "loss");
  REQUIRE(out[1].first == "grad");
  CHECK(out[0].second.dtype() == dtype);
  const double rtol = dtype == DType::f64 ? 1e-9 : 1e-4;
  const double atol = dtype == DType::f64 ? 1e-12 : 1e-6;
  const std::vector<double> loss = out[0].second.to_vector<double>();
  const std::vector<double> expected_loss = fixture_doubles(f, "loss");
  REQUIRE(loss.size() == expected_loss.size());
  for (size_t i = 0; i < loss.size(); ++i) {
    INFO("loss[" << i << "] " << loss[i] << " vs PyTorch " << expected_loss[i]);
    CHECK(close(loss[i], expected_loss[i], rtol, atol));
  }
  // The fixture's gradient is of sum(weights * loss); sample n's gradient lies in column n of
  // log_probs alone, so dividing column n by its weight gives the probe's (unit weights).
  const std::vector<double> weights = fixture_doubles(f, "grad_weights");
  const std::vector<double> grad = out[1].second.to_vector<double>();
  const std::vector<double> expected_grad = fixture_doubles(f, "grad");
  REQUIRE(out[1].second.shape() == Shape(shape.begin(), shape.end()));
  REQUIRE(grad.size() == expected_grad.size());
  const int64_t batch = shape[1], classes = shape[2];
  for (size_t i = 0; i < grad.size(); ++i) {
    const size_t n = size_t((int64_t(i) / classes) % batch);
    const double weight = weights.size() == 1 ? weights[0] : weights[n];
    INFO("grad[" << i << "] " << grad[i] << " vs PyTorch " << expected_grad[i] << " / " << weight);
    CHECK(close(grad[i], expected_grad[i] / weight, rtol, atol));
  }
}

}  // namespace

TEST_CASE("probe --op ctc_loss matches PyTorch's CTC fixtures", "[probe][ctc]") {
  const ScratchFolder scratch;
  for (const char* name :
       {"ragged_f64_none", "concatenated_blank_last_f64_mean", "ragged_f32_sum",
        "single_frame_f64_mean", "infeasible_f64_none", "infeasible_zero_infinity_f64_mean",
        "infeasible_zero_infinity_f32_none", "long_260_labels_f64_mean"})
    check_probe_on_fixture(name, scratch);
}

TEST_CASE("probe --op refuses unknown ops, reductions and non-integer targets", "[probe][ctc]") {
  const ScratchFolder scratch;
  ProbeOptions options;
  options.op = "conv2d";
  CHECK_THROWS_WITH(run_probe(options), Catch::Contains("unknown --op 'conv2d'"));
  options.op = "ctc_loss";
  CHECK_THROWS_WITH(run_probe(options), Catch::Contains("needs --log-probs"));
  options.log_probs = scratch.file("lp.npy");
  options.targets = scratch.file("t.npy");
  options.input_lengths = scratch.file("il.npy");
  options.target_lengths = scratch.file("tl.npy");
  save_npy(options.log_probs,
           full({2, 1, 3}, std::log(1.0 / 3.0), TensorOptions{}.with(DType::f64)));
  save_npy(options.targets, full({1, 1}, 1.0, TensorOptions{}.with(DType::f64)));
  save_npy(options.input_lengths, from_vector(std::vector<int64_t>{2}, {1}));
  save_npy(options.target_lengths, from_vector(std::vector<int64_t>{1}, {1}));
  CHECK_THROWS_WITH(run_probe(options), Catch::Contains("--targets"));
  save_npy(options.targets, from_vector(std::vector<int64_t>{1}, {1, 1}));
  options.reduction = "average";
  CHECK_THROWS_WITH(run_probe(options), Catch::Contains("--reduction 'average'"));
  // A hand case: uniform over 3 classes, 2 frames, target "1": paths 1-, -1, 11 of 9.
  options.reduction = "sum";
  const NamedTensors out = run_probe(options);
  CHECK(out[0].second.item() == Approx(-std::log(3.0 / 9.0)).epsilon(1e-12));
}

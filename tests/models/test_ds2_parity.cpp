// DeepSpeech2 against PyTorch: fixtures from tests/fixtures/make_ds2.py (a narrowed DS2 in
// two variants on a ragged batch, the reference packing its RNN input with
// pack_padded_sequence), run through the probe as a user would. float64 within 1e-9 of
// torch's float64; float32 within 1e-4 of both torch's float32 and float64 runs.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "engine/io/safetensors.h"
#include "engine/ops.h"
#include "engine/random.h"
#include "models/registry.h"
#include "tests/support/tensor_compare.h"
#include "tools/probe/probe_run.h"

using namespace sonata;
using namespace sonata::testing;

namespace {

const std::string kFolder = std::string(SONATA_FIXTURES_DIR) + "/ds2";

// The second case's files leave out the big conv weights (shared with the first case) and
// their gradients; the f32 files leave out those gradients in both cases.
const std::vector<std::string> kBigConvWeights = {"conv.0.weight", "conv.3.weight"};

struct Ds2Case {
  std::string name;
  std::map<std::string, std::string> model_options;
};

// mask-padding 0: the reference is torch's DS2 as bench/peer_train_speech.py builds it, whose
// BatchNorms count the padded frames of the ragged batch (models/ds2.h).
const Ds2Case kLstm{"lstm",
                    {{"num-mels", "16"}, {"hidden", "32"}, {"layers", "2"}, {"mask-padding", "0"}}};
const Ds2Case kGruSumBn{"gru_sum_bn",
                        {{"num-mels", "16"},
                         {"hidden", "24"},
                         {"layers", "3"},
                         {"rnn", "gru"},
                         {"merge", "sum"},
                         {"seq-batch-norm", "1"},
                         {"mask-padding", "0"}}};

// The case's weights file, or where it lacks the shared conv weights, a temporary copy
// completed with them (removed again when this goes out of scope).
class CaseWeights {
 public:
  explicit CaseWeights(const Ds2Case& c) : path_(kFolder + "/" + c.name + ".weights.safetensors") {
    if (c.name == kLstm.name) return;
    NamedTensors weights = load_safetensors(path_).tensors;
    for (const auto& [name, t] : load_safetensors(kFolder + "/lstm.weights.safetensors").tensors)
      if (std::find(kBigConvWeights.begin(), kBigConvWeights.end(), name) != kBigConvWeights.end())
        weights.emplace_back(name, t);
    path_ = (std::filesystem::temp_directory_path() /
             ("sonata_ds2_" + c.name + "_" + std::to_string(getpid()) + ".weights.safetensors"))
                .string();
    save_safetensors(path_, weights);
    temporary_ = true;
  }
  ~CaseWeights() {
    if (temporary_) std::filesystem::remove(path_);
  }
  CaseWeights(const CaseWeights&) = delete;
  CaseWeights& operator=(const CaseWeights&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  bool temporary_ = false;
};

ProbeOptions probe_for(const Ds2Case& c, const CaseWeights& weights, const std::string& precision,
                       bool train) {
  ProbeOptions options;
  options.model = "ds2";
  options.model_options = c.model_options;
  options.weights = weights.path();
  options.input = kFolder + "/input.npy";
  options.input_lengths = kFolder + "/input_lengths.npy";
  options.targets = kFolder + "/targets.npy";
  options.target_lengths = kFolder + "/target_lengths.npy";
  options.train = train;
  options.backward = train;
  options.precision = precision;
  return options;
}

// Every tensor of `expected_file` against ours, and with `complete` every one of ours found
// there unless the file leaves it out on purpose. `zero_bound`: the conv biases' gradients
// are zero by construction in training (the BatchNorm after each conv removes any constant);
// torch's are rounding noise, so both must be as near zero as the precision allows. Returns
// the largest relative error seen.
double compare_with_torch(const NamedTensors& ours, const std::string& expected_file,
                          double tolerance, double zero_bound, bool complete) {
  const std::map<std::string, Tensor> by_name(ours.begin(), ours.end());
  const SafetensorsContents expected = load_safetensors(kFolder + "/" + expected_file);
  REQUIRE(!expected.tensors.empty());
  std::set<std::string> compared;
  double worst = 0;
  for (const auto& [name, theirs] : expected.tensors) {
    INFO(expected_file << ": " << name);
    REQUIRE(by_name.count(name));
    const Tensor& mine = by_name.at(name);
    REQUIRE(mine.shape() == theirs.shape());
    compared.insert(name);
    if (theirs.dtype() == DType::i64) {
      CHECK(mine.to_vector<int64_t>() == theirs.to_vector<int64_t>());
      continue;
    }
    if (max_abs(theirs) < std::max(zero_bound, 1e-12)) {
      CHECK(max_abs(mine) <= zero_bound);
      continue;
    }
    const double error = relative_error(mine, theirs);
    worst = std::max(worst, error);
    INFO("relative error " << error);
    CHECK(error <= tolerance);
  }
  for (const auto& [name, t] : ours) {
    if (!complete || compared.count(name)) continue;
    INFO(expected_file << " lacks " << name);
    const std::string weight = name.rfind("grad.", 0) == 0 ? name.substr(5) : name;
    CHECK(std::find(kBigConvWeights.begin(), kBigConvWeights.end(), weight) !=
          kBigConvWeights.end());
  }
  return worst;
}

void check_training_step(const Ds2Case& c) {
  const CaseWeights weights(c);
  const NamedTensors f64 = run_probe(probe_for(c, weights, "fp64", true));
  const double e64 = compare_with_torch(f64, c.name + ".train_f64.safetensors", 1e-9, 1e-12, true);
  const NamedTensors f32 = run_probe(probe_for(c, weights, "fp32", true));
  const double e32 =
      std::max(compare_with_torch(f32, c.name + ".train_f32.safetensors", 1e-4, 1e-5, true),
               compare_with_torch(f32, c.name + ".train_f64.safetensors", 1e-4, 1e-5, true));
  INFO(c.name << ": largest relative error f64 " << e64 << ", f32 " << e32);
  CHECK((e64 <= 1e-9 && e32 <= 1e-4));
}

}  // namespace

TEST_CASE(
    "narrow ds2 (BiLSTM, concatenated) matches PyTorch on a ragged batch: log_probs, output "
    "lengths, CTC loss, every gradient, BN buffers",
    "[models][ds2][parity]") {
  check_training_step(kLstm);
}

TEST_CASE(
    "narrow ds2 with GRU, summed directions and sequence-wise BatchNorm matches PyTorch on a "
    "ragged batch",
    "[models][ds2][parity]") {
  check_training_step(kGruSumBn);
}

TEST_CASE("narrow ds2 matches PyTorch in eval mode", "[models][ds2][parity]") {
  for (const Ds2Case& c : {kLstm, kGruSumBn}) {
    INFO(c.name);
    const CaseWeights weights(c);
    compare_with_torch(run_probe(probe_for(c, weights, "fp64", false)),
                       c.name + ".eval_f64.safetensors", 1e-10, 0, false);
    compare_with_torch(run_probe(probe_for(c, weights, "fp32", false)),
                       c.name + ".eval_f64.safetensors", 1e-4, 0, false);
  }
}

TEST_CASE("ds2's default is peer_torch.py's DS2-small: state_dict names, shapes, dtypes",
          "[models][ds2]") {
  manual_seed(0);
  const auto model = make_model("ds2");
  const NamedTensors ours = model->state_dict();
  std::ifstream in(kFolder + "/ds2_small.state_dict.txt");
  REQUIRE(in.good());
  std::string name, shape, dtype;
  size_t i = 0;
  int64_t parameters_from_torch = 0;
  for (; in >> name >> shape >> dtype; ++i) {
    INFO(name);
    REQUIRE(i < ours.size());
    CHECK(ours[i].first == name);
    std::string ours_shape;
    for (int64_t size : ours[i].second.shape()) {
      if (!ours_shape.empty()) ours_shape.push_back('x');
      ours_shape.append(std::to_string(size));
    }
    CHECK((ours_shape.empty() ? "scalar" : ours_shape) == shape);
    CHECK(std::string(ours[i].second.dtype() == DType::i64 ? "int64" : "float32") == dtype);
    if (dtype == "float32" && name.find("running") == std::string::npos)
      parameters_from_torch += ours[i].second.numel();
  }
  CHECK(i == ours.size());
  CHECK(model->parameter_count() == parameters_from_torch);
  // 32*1*11*41 + 32*32*11*21 + 4*32 (conv, BN) + 3 BiLSTM layers + 512*29 + 29
  CHECK(parameters_from_torch == 5'259'069);
}

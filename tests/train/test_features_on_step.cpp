// --features-on step: the training audio featurised (and masked) inside each step instead of
// once at start. On the CPU the step path computes the same log-mel per clip and draws the
// same SpecAugment masks and speeds from the same keys, so a run must end with the weights
// and losses of --features-on load; likewise the classifier's jitter moved into the step.
// Also the flag's validation.
#include <catch2/catch.hpp>

#include <CLI/CLI.hpp>

#include <cmath>
#include <fstream>
#include <numbers>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/random.h"
#include "tests/support/audio_files.h"
#include "tests/support/letters_corpus.h"
#include "tests/train/trainer_test_util.h"
#include "train/tasks/class_task.h"
#include "train/tasks/speech_task.h"
#include "train/train_loop.h"

using namespace sonata;
using namespace sonata::testing;
using Catch::Contains;

namespace {

struct RunResult {
  std::vector<double> weights, losses;
};

RunResult train(const TrainerOptions& options) {
  manual_seed(options.seed);
  SpeechTask task(options, Vocabulary());
  run_training(options, task, Device::cpu());
  RunResult result;
  for (const auto& [name, tensor] : task.model().state_dict()) {
    const auto v = tensor.to(DType::f64).to_vector<double>();
    result.weights.insert(result.weights.end(), v.begin(), v.end());
  }
  std::ifstream in(options.metrics);
  for (std::string line; std::getline(in, line);) {
    const auto record = nlohmann::json::parse(line);
    if (record["event"] == "train") result.losses.push_back(record["loss"].get<double>());
  }
  return result;
}

void require_close(const std::vector<double>& a, const std::vector<double>& b, const char* what) {
  INFO(what);
  REQUIRE(a.size() == b.size());
  REQUIRE(!a.empty());
  for (size_t i = 0; i < a.size(); ++i) {
    INFO("element " << i);
    REQUIRE(std::abs(a[i] - b[i]) <= 1e-6 + 1e-6 * std::abs(b[i]));
  }
}

}  // namespace

TEST_CASE("trainer options: --features-on is load or step and step needs the audio", "[trainer]") {
  CHECK(parse_command_line({"--train", "a.tsv"}).features_on == "load");
  const TrainerOptions step = parse_command_line({"--train", "a.tsv", "--features-on", "step"});
  CHECK(step.features_on == "step");
  step.check();
  CHECK_THROWS_WITH(parse_command_line({"--train", "a.tsv", "--features-on", "gpu"}).check(),
                    Contains("--features-on must be load or step, got 'gpu'"));
  CHECK_THROWS_WITH(
      parse_command_line({"--train", "a.tsv", "--features-on", "step", "--feature-cache", "c"})
          .check(),
      Contains("--features-on step needs the audio"));
}

#if SONATA_WITH_SNDFILE
TEST_CASE("trainer: --features-on step trains as --features-on load", "[trainer]") {
  TemporaryFolder folder("trainer_features_on_step");
  TrainerOptions options;
  options.model = "ds2";
  options.model_config = {{"conv-channels", "4"}, {"hidden", "24"}, {"layers", "1"}};
  options.features.n_mels = 40;
  options.train_manifest = write_letters_corpus(folder.path().string(), "train", 8, 4);
  options.batch_size = 4;
  options.epochs = 2;
  options.lr = 1e-2;
  options.progress = "none";
  options.log_every = 1;
  options.workers = 2;
  const bool augmented = GENERATE(false, true);
  INFO((augmented ? "with" : "without") << " SpecAugment and speed perturbation");
  options.spec_augment = augmented;
  options.speed_perturb = augmented;
  options.time_mask_width = 8;

  options.metrics = folder.file("load.jsonl");
  const RunResult load = train(options);
  options.features_on = "step";
  options.metrics = folder.file("step.jsonl");
  const RunResult step = train(options);
  CHECK(load.losses.size() == 4);
  require_close(step.losses, load.losses, "losses");
  require_close(step.weights, load.weights, "weights");

  // The step task kept the training audio, not its features: its batches are waveforms.
  const SpeechTask task(options, Vocabulary());
  CHECK(task.train_items() == 8);
  const HostBatch batch = task.prepare({0, 1}, 0);
  CHECK(batch[SpeechBatch::input].dim() == 2);
  CHECK(batch.fields.size() == 6);
}

TEST_CASE("trainer: --features-on step jitters images in the step as prepare() did", "[trainer]") {
  TemporaryFolder folder("trainer_jitter_on_step");
  const std::string manifest = write_tone_tracks(folder.path().string(), 4);
  TrainerOptions options;
  options.model = "vgg19_bn";
  options.model_config = {{"width", "0.0625"}, {"dropout", "0"}};
  options.train_manifest = manifest;
  options.features.sample_rate = kLettersRate;
  options.slice_seconds = 1.0;
  options.image_height = 32;
  options.image_width = 32;
  options.workers = 1;
  options.brightness = 0.4;
  options.contrast = 0.4;
  manual_seed(1);
  ClassTask load(options);
  options.features_on = "step";
  manual_seed(1);
  ClassTask step(options);
  options.brightness = options.contrast = 0;
  const ClassTask plain(options);

  const std::vector<int64_t> items{0, 1, 2, 3};
  const HostBatch step_batch = step.prepare(items, 1);
  // The host batch is not jittered: that happens in the step (Task::input).
  CHECK(step_batch[ImageBatch::image].to_vector<float>() ==
        plain.prepare(items, 1)[ImageBatch::image].to_vector<float>());
  const double load_loss = batch_loss(load, load.prepare(items, 1), Device::cpu()).item();
  const double step_loss = batch_loss(step, step_batch, Device::cpu()).item();
  CHECK(std::isfinite(load_loss));
  CHECK(step_loss == load_loss);
  // Another epoch draws other factors, so the loss moves.
  CHECK(batch_loss(step, step.prepare(items, 2), Device::cpu()).item() != step_loss);
}
#endif

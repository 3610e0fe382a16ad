// Resuming a run that has finished: with the same length it says the run is complete and how
// to extend it; with a larger --max-steps it continues where the last step left off (an
// epoch that --max-steps cut short included), as one longer run would have.
#include <catch2/catch.hpp>

#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/random.h"
#include "tests/support/audio_files.h"
#include "tests/support/letters_corpus.h"
#include "tests/support/stdout_capture.h"
#include "tests/support/tiny_ds2.h"
#include "train/tasks/speech_task.h"
#include "train/train_loop.h"

using namespace sonata;
using namespace sonata::testing;
using Catch::Contains;

#if SONATA_WITH_SNDFILE
namespace {

std::unique_ptr<SpeechTask> train(const TrainerOptions& options) {
  manual_seed(options.seed);
  auto task = std::make_unique<SpeechTask>(options, Vocabulary());
  run_training(options, *task, Device::cpu());
  return task;
}

std::vector<int64_t> train_steps(const std::string& metrics) {
  std::ifstream in(metrics);
  std::vector<int64_t> steps;
  for (std::string line; std::getline(in, line);) {
    const auto record = nlohmann::json::parse(line);
    if (record["event"] == "train") steps.push_back(record["step"].get<int64_t>());
  }
  return steps;
}

std::vector<double> weights(Task& task) {
  std::vector<double> values;
  for (const auto& [name, tensor] : task.model().state_dict()) {
    const auto v = tensor.to(DType::f64).to_vector<double>();
    values.insert(values.end(), v.begin(), v.end());
  }
  return values;
}

TrainerOptions letters_options(const std::string& manifest) {
  TrainerOptions options = tiny_ds2_options(manifest);
  options.batch_size = 4;  // 14 clips: 4 steps an epoch
  options.epochs = 2;
  options.schedule = "constant";  // the same lr whatever the run's length
  options.lr = 1e-2;
  options.log_every = 1;
  return options;
}

}  // namespace

TEST_CASE("resume: a finished run says it is complete and how to train further",
          "[trainer][resume]") {
  TemporaryFolder folder("resume_complete");
  const std::string manifest = write_letters_corpus(folder.path().string(), "train", 14, 5);
  TrainerOptions options = letters_options(manifest);
  options.checkpoint_dir = folder.file("run");
  train(options);
  options.resume = "auto";
  options.progress = "lines";
  const std::string printed = stdout_of(folder.file("stdout"), [&] { train(options); });
  CHECK_THAT(printed, Contains("the run is already complete: its checkpoint is at step 8 and "
                               "this run ends at step 8 (--epochs 2); nothing to train. To train "
                               "further, resume with a larger --epochs or --max-steps"));
  CHECK(train_steps(options.checkpoint_dir + "/metrics.jsonl") ==
        std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 8});
}

TEST_CASE("resume: a larger --max-steps continues a finished run where its last step left off",
          "[trainer][resume]") {
  TemporaryFolder folder("resume_extend");
  const std::string manifest = write_letters_corpus(folder.path().string(), "train", 14, 5);
  TrainerOptions straight = letters_options(manifest);
  straight.max_steps = 10;
  straight.metrics = folder.file("straight.jsonl");
  const std::vector<double> reference = weights(*train(straight));

  // 6 steps end in the middle of the second epoch; the longer run goes on from batch 2 of it.
  TrainerOptions options = letters_options(manifest);
  options.max_steps = 6;
  options.checkpoint_dir = folder.file("run");
  train(options);
  options.max_steps = 10;
  options.resume = "auto";
  CHECK(weights(*train(options)) == reference);
  CHECK(train_steps(options.checkpoint_dir + "/metrics.jsonl") ==
        std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10});
}
#endif

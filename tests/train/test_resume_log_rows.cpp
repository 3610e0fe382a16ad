// A resumed run's metrics.jsonl reads as one run's: its first loss row after the resume
// averages the steps an uninterrupted run's row does (the sums since the last row travel in
// the checkpoint), not only those since the resume.
#include <catch2/catch.hpp>

#include <fstream>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/random.h"
#include "tests/support/audio_files.h"
#include "tests/support/letters_corpus.h"
#include "tests/support/tiny_ds2.h"
#include "train/tasks/speech_task.h"
#include "train/train_loop.h"

#if SONATA_WITH_SNDFILE
using namespace sonata;
using namespace sonata::testing;

namespace {

void train(const TrainerOptions& options) {
  manual_seed(options.seed);
  SpeechTask task(options, Vocabulary());
  run_training(options, task, Device::cpu());
}

// The "train" rows' losses by step.
std::map<int64_t, double> losses_by_step(const std::string& metrics) {
  std::ifstream in(metrics);
  std::map<int64_t, double> losses;
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json record = nlohmann::json::parse(line);
    if (record["event"] == "train")
      losses[record["step"].get<int64_t>()] = record["loss"].get<double>();
  }
  return losses;
}

}  // namespace

TEST_CASE("after a resume the first loss row averages the steps an uninterrupted run's does",
          "[trainer][resume]") {
  TemporaryFolder folder("resume_log_rows");
  const std::string manifest = write_letters_corpus(folder.path().string(), "train", 8, 9);
  TrainerOptions options = tiny_ds2_options(manifest);
  options.epochs = 1;  // 4 steps; one row at the epoch's end (step 4)
  options.log_every = 10;
  options.checkpoint_dir = folder.file("whole");
  train(options);
  const std::map<int64_t, double> whole = losses_by_step(options.checkpoint_dir + "/metrics.jsonl");

  options.checkpoint_dir = folder.file("resumed");
  options.stop_after = 1;  // in the middle of the row's four steps
  train(options);
  options.stop_after = 0;
  options.resume = "auto";
  train(options);
  const std::map<int64_t, double> resumed =
      losses_by_step(options.checkpoint_dir + "/metrics.jsonl");
  REQUIRE(whole.size() == 1);
  REQUIRE(resumed.size() == 1);
  CHECK(resumed.begin()->first == whole.begin()->first);
  CHECK(resumed.begin()->second == whole.begin()->second);  // bit for bit, on the CPU
}
#endif

// Overlong inputs: the speech task's default --max-duration leaves a clip over it out (before
// decoding it), whatever --bad-input, counts it in the data record and warns once naming the
// longest; and running out of memory in a step names the batch's clips.
#include <catch2/catch.hpp>

#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "base/error.h"
#include "data/audio/decode.h"
#include "data/manifest/input_policy.h"
#include "tests/support/audio_files.h"
#include "tests/support/letters_corpus.h"
#include "tests/support/tiny_ds2.h"
#include "tests/support/weight_task.h"
#include "train/tasks/speech_task.h"
#include "train/train_loop.h"

using namespace sonata;
using namespace sonata::testing;
using Catch::Contains;

namespace {

std::string read_manifest(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

#if SONATA_WITH_SNDFILE
TEST_CASE("trainer: a clip over the default --max-duration is left out, counted and named",
          "[trainer][bad-input]") {
  TemporaryFolder folder("trainer_max_duration");
  const std::string root = folder.path().string();
  const std::string corpus = write_letters_corpus(root, "train", 4, 7);
  // A minute of quiet noise among the letter clips: over the speech default of 40 s.
  std::mt19937 generator(1);
  std::normal_distribution<float> noise(0.0f, 0.01f);
  std::vector<float> minute(size_t(60 * kLettersRate));
  for (float& sample : minute) sample = noise(generator);
  write_pcm16_wav(folder.file("long.wav"), minute, kLettersRate);
  CHECK(declared_seconds(folder.file("long.wav")) == Approx(60.0));
  write_text(folder.file("with_long.tsv"),
             read_manifest(corpus) + folder.file("long.wav") + "\tab\n");

  TrainerOptions options = tiny_ds2_options(folder.file("with_long.tsv"));
  REQUIRE(options.bad_input == "stop");  // the default: the limit never stops a run
  {
    const SpeechTask task(options, Vocabulary());
    CHECK(task.train_items() == 4);
    const DataReport report = task.data_report();
    CHECK(report.counts.at("train_too_long") == 1);
    CHECK(report.counts.at("train_skipped") == 0);
    REQUIRE(report.lines.size() == 1);
    CHECK_THAT(report.lines.front(),
               Contains("warning: train: 1 clip longer than --max-duration 40 s skipped") &&
                   Contains("the longest: " + folder.file("long.wav") + " (60 s)"));
    CHECK_THAT(task.describe(), Contains("1 bad clips skipped") && Contains("--max-duration 40"));
  }
  // 0: no limit, every clip kept.
  options.max_duration = 0;
  {
    const SpeechTask task(options, Vocabulary());
    CHECK(task.train_items() == 5);
    CHECK(task.data_report().counts.at("train_too_long") == 0);
  }
}
#endif

namespace {

// A task whose every step runs out of memory, its batches knowing their clips.
class OutOfMemoryTask : public WeightTask {
 public:
  OutOfMemoryTask() : WeightTask(4, "out of memory") {}
  int64_t train_items() const override { return 8; }
  std::vector<int64_t> train_lengths() const override { return std::vector<int64_t>(8, 1); }
  SamplingKind sampling() const override { return SamplingKind::uniform; }
  HostBatch prepare(const std::vector<int64_t>& items, int64_t) const override {
    HostBatch batch{{{"input", full({4}, 1.0), true}}, int64_t(items.size()), 0.0};
    for (const int64_t item : items) batch.sources.push_back(str("clip_", item, ".wav"));
    return batch;
  }
  Tensor loss(const LayerValue&, const std::vector<Tensor>&, Device) override {
    throw Error("out of CPU memory allocating 32768 bytes");
  }
};

}  // namespace

TEST_CASE("trainer: running out of memory in a step names the batch's clips",
          "[trainer][bad-input]") {
  TemporaryFolder folder("trainer_oom_batch");
  TrainerOptions options;
  options.model = "ds2";
  options.train_manifest = "unused";
  options.batch_size = 2;
  options.epochs = 1;
  options.workers = 1;
  options.progress = "none";
  options.metrics = folder.file("metrics.jsonl");
  OutOfMemoryTask task;
  CHECK_THROWS_WITH(run_training(options, task, Device::cpu()),
                    Contains("out of CPU memory allocating 32768 bytes in a batch of 2 inputs: "
                             "clip_") &&
                        Contains("--max-duration"));
}

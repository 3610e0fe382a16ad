// How much of a speech batch is padding: each batch counts its items' time steps and the
// steps it computes (items x the longest), with the features made at load or in the step,
// and the trainer's train records report the share of padding since the last record.
#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "data/datasets/speech_dataset.h"
#include "engine/random.h"
#include "tests/support/audio_files.h"
#include "tests/support/letters_corpus.h"
#include "tests/support/tiny_ds2.h"
#include "train/tasks/speech_task.h"
#include "train/train_loop.h"

using namespace sonata;
using namespace sonata::testing;

#if SONATA_WITH_SNDFILE
namespace {

// The padding shares of a run's train records.
std::vector<double> padding_shares(const TrainerOptions& options) {
  manual_seed(options.seed);
  SpeechTask task(options, Vocabulary());
  run_training(options, task, Device::cpu());
  std::vector<double> shares;
  std::ifstream in(options.metrics);
  for (std::string line; std::getline(in, line);) {
    const auto record = nlohmann::json::parse(line);
    if (record["event"] != "train") continue;
    REQUIRE(record.contains("padding_share"));
    shares.push_back(record["padding_share"].get<double>());
  }
  return shares;
}

}  // namespace

TEST_CASE("trainer options: --pad-frames-to defaults to the batcher's time multiple", "[trainer]") {
  CHECK(TrainerOptions{}.pad_frames_to == kSpeechTimeMultiple);
}

TEST_CASE("a speech batch counts its items' frames and the frames it computes", "[trainer]") {
  TemporaryFolder folder("padding_share_batch");
  TrainerOptions options =
      tiny_ds2_options(write_letters_corpus(folder.path().string(), "train", 6, 11));
  for (const char* features_on : {"load", "step"}) {
    INFO("--features-on " << features_on);
    options.features_on = features_on;
    SpeechTask task(options, Vocabulary());
    const HostBatch batch = task.prepare({0, 1, 2, 3}, 0);
    const std::vector<int64_t> lengths = batch[SpeechBatch::input_lengths].to_vector<int64_t>();
    int64_t frames = 0;
    for (int64_t length : lengths) frames += length;
    CHECK(batch.frames == frames);
    CHECK(batch.padded_frames ==
          4 * padded_time(*std::max_element(lengths.begin(), lengths.end()), kSpeechTimeMultiple));
    CHECK(batch.frames < batch.padded_frames);  // the letters clips differ in length
  }
}

TEST_CASE("trainer: train records report the share of padded frames", "[trainer]") {
  TemporaryFolder folder("padding_share_run");
  TrainerOptions options =
      tiny_ds2_options(write_letters_corpus(folder.path().string(), "train", 8, 5));
  options.epochs = 1;
  options.log_every = 1;
  options.lr = 1e-2;

  // One clip a batch, not padded to a multiple: nothing is padding.
  options.batch_size = 1;
  options.pad_frames_to = 1;
  options.metrics = folder.file("single.jsonl");
  const std::vector<double> single = padding_shares(options);
  CHECK(single.size() == 8);
  for (double share : single) CHECK(share == 0.0);

  // All eight clips in one batch, whatever their order: the share its own counts give.
  options.batch_size = 8;
  options.pad_frames_to = kSpeechTimeMultiple;
  options.metrics = folder.file("all.jsonl");
  const std::vector<double> all = padding_shares(options);
  REQUIRE(all.size() == 1);
  SpeechTask task(options, Vocabulary());
  const HostBatch batch = task.prepare({0, 1, 2, 3, 4, 5, 6, 7}, 0);
  REQUIRE(batch.frames < batch.padded_frames);
  CHECK(all[0] == Approx(1.0 - double(batch.frames) / double(batch.padded_frames)));
}
#endif

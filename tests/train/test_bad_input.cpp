// --bad-input on both tasks, on corpora written here: a missing, corrupt, empty, NaN or too
// short input stops the run naming it, or under `skip` is left out, named when the run starts
// (Task::data_report) and counted in metrics.jsonl's "data" record; and CTC transcripts too
// long for their clips are counted there too.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <numbers>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "engine/random.h"
#include "tests/support/audio_files.h"
#include "tests/support/letters_corpus.h"
#include "tests/support/stdout_capture.h"
#include "train/tasks/class_task.h"
#include "train/tasks/ctc_reachability.h"
#include "train/tasks/speech_task.h"
#include "train/train_loop.h"

using namespace sonata;
using namespace sonata::testing;
using Catch::Contains;

namespace {

constexpr int kRate = kLettersRate;

// A mono IEEE-float WAV written byte by byte, so it can hold a NaN.
void write_float_wav(const std::string& path, const std::vector<float>& samples) {
  std::vector<uint8_t> out;
  auto text = [&](const char* chars) { out.insert(out.end(), chars, chars + 4); };
  auto put = [&](uint32_t value, int bytes) {
    for (int i = 0; i < bytes; ++i) out.push_back(uint8_t(value >> (8 * i)));
  };
  const uint32_t data_bytes = uint32_t(samples.size() * 4);
  text("RIFF");
  put(36 + data_bytes, 4);
  text("WAVE");
  text("fmt ");
  put(16, 4);
  put(3, 2);  // IEEE float
  put(1, 2);
  put(kRate, 4);
  put(kRate * 4, 4);
  put(4, 2);
  put(32, 2);
  text("data");
  put(data_bytes, 4);
  for (const float sample : samples) {
    uint32_t bits;
    std::memcpy(&bits, &sample, 4);
    put(bits, 4);
  }
  write_bytes(path, out);
}

std::vector<float> tone(double seconds, double hz) {
  std::vector<float> samples(size_t(seconds * kRate));
  for (size_t i = 0; i < samples.size(); ++i)
    samples[i] = 0.3f * float(std::sin(2 * std::numbers::pi * hz * double(i) / kRate));
  return samples;
}

nlohmann::json data_record(const std::string& metrics) {
  std::ifstream in(metrics);
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json record = nlohmann::json::parse(line);
    if (record["event"] == "data") return record;
  }
  return nullptr;
}

TrainerOptions tiny_vgg_options(const std::string& train) {
  TrainerOptions options;
  options.model = "vgg19_bn";
  options.model_config = {{"width", "0.0625"}};
  options.train_manifest = train;
  options.features.sample_rate = kRate;
  options.slice_seconds = 1.0;
  // 32: VGG's five poolings leave one pixel.
  options.image_height = 32;
  options.image_width = 32;
  options.workers = 2;
  options.batch_size = 2;
  options.epochs = 1;
  options.warmup = 0;
  options.progress = "none";
  return options;
}

TrainerOptions tiny_ds2_options(const std::string& train) {
  TrainerOptions options;
  options.model = "ds2";
  options.model_config = {{"conv-channels", "4"}, {"hidden", "8"}, {"layers", "1"}};
  options.features.n_mels = 40;
  options.train_manifest = train;
  options.batch_size = 4;
  options.epochs = 1;
  options.warmup = 0;
  options.progress = "none";
  options.workers = 2;
  return options;
}

}  // namespace

TEST_CASE("ctc_min_frames: one frame per label and a blank between equal neighbours",
          "[trainer][bad_input]") {
  CHECK(ctc_min_frames({}) == 0);
  CHECK(ctc_min_frames({3}) == 1);
  CHECK(ctc_min_frames({3, 3}) == 3);           // 3, blank, 3
  CHECK(ctc_min_frames({1, 2, 2, 2, 1}) == 7);  // 1 2 _ 2 _ 2 1
  const std::vector<std::string> lines = ctc_unreachable_clips(
      {"fits.wav", "tight.wav", "short.wav"}, {{1, 2}, {4, 4}, {4, 4}}, {2, 3, 2});
  REQUIRE(lines.size() == 1);
  CHECK_THAT(lines[0], Contains("short.wav") && Contains("need 3"));
}

#if SONATA_WITH_SNDFILE
TEST_CASE("vgg19_bn: bad tracks stop the run naming them, or are skipped, named and counted",
          "[trainer][bad_input]") {
  TemporaryFolder folder("bad_input_tracks");
  std::string manifest;
  for (int k = 0; k < 4; ++k) {
    const std::string path = folder.file("good_" + std::to_string(k) + ".wav");
    write_pcm16_wav(path, tone(1.0, 300.0 + 400.0 * k), kRate);
    manifest += path + (k % 2 ? "\trock\n" : "\tjazz\n");
  }
  write_text(folder.file("broken.wav"), "RIFF....not a wave file");
  write_bytes(folder.file("empty.wav"), {});
  std::vector<float> with_nan = tone(1.0, 500.0);
  with_nan[100] = std::numeric_limits<float>::quiet_NaN();
  write_float_wav(folder.file("nan.wav"), with_nan);
  write_pcm16_wav(folder.file("short.wav"), tone(0.01, 500.0), kRate);
  const char* bad[] = {"broken.wav", "empty.wav", "nan.wav", "short.wav", "missing.wav"};
  for (const char* name : bad) manifest += folder.file(name) + "\tjazz\n";
  write_text(folder.file("train.tsv"), manifest);

  TrainerOptions options = tiny_vgg_options(folder.file("train.tsv"));
  // --bad-input stop: the first bad track in manifest order, named. A missing file is found
  // as the manifest is read.
  CHECK_THROWS_WITH(ClassTask(options), Contains("missing.wav"));
  // A track shorter than one slice is bad under stop too, not padded into a silent slice.
  std::string short_only;
  for (int k = 0; k < 4; ++k)
    short_only += folder.file("good_" + std::to_string(k) + ".wav") + "\tjazz\n";
  short_only += folder.file("short.wav") + "\trock\n";
  write_text(folder.file("short.tsv"), short_only);
  TrainerOptions short_options = tiny_vgg_options(folder.file("short.tsv"));
  CHECK_THROWS_WITH(ClassTask(short_options), Contains("short.wav") && Contains("slice"));

  options.bad_input = "skip";
  options.metrics = folder.file("metrics.jsonl");
  manual_seed(1);
  ClassTask task(options);
  CHECK(task.train_items() == 4);  // one 1 s slice per good track
  const DataReport report = task.data_report();
  CHECK(report.counts.at("train_skipped") == 5);
  REQUIRE(report.lines.size() == 1);
  for (const char* name : bad) CHECK_THAT(report.lines[0], Contains(name));
  run_training(options, task, Device::cpu());
  const nlohmann::json record = data_record(options.metrics);
  REQUIRE(record.is_object());
  CHECK(record["train_skipped"] == 5);
}

TEST_CASE("ds2: a missing clip is skipped, named and counted under --bad-input skip",
          "[trainer][bad_input]") {
  TemporaryFolder folder("bad_input_missing_clip");
  const std::string train = write_letters_corpus(folder.path().string(), "train", 6, 4);
  std::ifstream in(train);
  std::string manifest((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  manifest += "gone.wav\tab\n";
  write_text(train, manifest);

  TrainerOptions options = tiny_ds2_options(train);
  CHECK_THROWS_WITH(SpeechTask(options, Vocabulary()), Contains("gone.wav"));
  options.bad_input = "skip";
  options.metrics = folder.file("metrics.jsonl");
  manual_seed(2);
  SpeechTask task(options, Vocabulary());
  CHECK(task.train_items() == 6);
  const DataReport report = task.data_report();
  CHECK(report.counts.at("train_skipped") == 1);
  REQUIRE(report.lines.size() == 1);
  CHECK_THAT(report.lines[0], Contains("gone.wav") && Contains("1 bad clips skipped"));
  run_training(options, task, Device::cpu());
  const nlohmann::json record = data_record(options.metrics);
  REQUIRE(record.is_object());
  CHECK(record["train_skipped"] == 1);
}

TEST_CASE("ds2: transcripts too long for CTC to align are counted and named at start",
          "[trainer][bad_input]") {
  TemporaryFolder folder("bad_input_ctc");
  const std::string train = write_letters_corpus(folder.path().string(), "train", 6, 5);
  // One letter's clip lasts 0.5 s, about 50 feature frames; 40 equal letters need 79 (a
  // blank between each pair), and DS2's convolutions give fewer frames than they are given.
  std::mt19937 generator(6);
  write_pcm16_wav(folder.file("crammed.wav"), letters_audio("a", generator), kRate);
  std::ifstream in(train);
  std::string manifest((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  manifest += "crammed.wav\t" + std::string(40, 'b') + "\n";
  write_text(train, manifest);

  TrainerOptions options = tiny_ds2_options(train);
  options.metrics = folder.file("metrics.jsonl");
  manual_seed(3);
  SpeechTask task(options, Vocabulary());
  CHECK(task.train_items() == 7);  // kept: its loss is 0, and the run says so
  const DataReport report = task.data_report();
  CHECK(report.counts.at("train_ctc_unreachable") == 1);
  CHECK(report.counts.at("train_skipped") == 0);
  REQUIRE(report.lines.size() == 1);
  CHECK_THAT(report.lines[0], Contains("crammed.wav") && Contains("1 of 7 clips"));
  run_training(options, task, Device::cpu());
  const nlohmann::json record = data_record(options.metrics);
  REQUIRE(record.is_object());
  CHECK(record["train_ctc_unreachable"] == 1);
  CHECK(record["train_skipped"] == 0);
}
TEST_CASE(
    "ds2: skipped clips are named under --progress none, on stderr and in the data record, "
    "the first ten and the count of the rest",
    "[trainer][bad_input][notice]") {
  TemporaryFolder folder("bad_input_named_skips");
  const std::string train = write_letters_corpus(folder.path().string(), "train", 4, 8);
  std::ifstream in(train);
  std::string manifest((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (int i = 0; i < 12; ++i) manifest += "gone" + std::to_string(i) + ".wav\tab\n";
  write_text(train, manifest);

  TrainerOptions options = tiny_ds2_options(train);
  REQUIRE(options.progress == "none");
  options.bad_input = "skip";
  options.max_steps = 1;
  options.metrics = folder.file("metrics.jsonl");
  manual_seed(2);
  SpeechTask task(options, Vocabulary());
  const std::string err =
      stderr_of(folder.file("stderr"), [&] { run_training(options, task, Device::cpu()); });
  CHECK_THAT(err, Contains("12 bad clips skipped") && Contains("gone0.wav") &&
                      Contains("gone9.wav") && Contains("and 2 more"));
  CHECK_THAT(err, !Contains("gone10.wav") && !Contains("gone11.wav"));
  const nlohmann::json record = data_record(options.metrics);
  REQUIRE(record.is_object());
  CHECK(record["train_skipped"] == 12);
  REQUIRE(record["train_skipped_first"].size() == 10);
  for (int i = 0; i < 10; ++i)
    CHECK_THAT(record["train_skipped_first"][size_t(i)].get<std::string>(),
               Contains("gone" + std::to_string(i) + ".wav"));
}
#endif

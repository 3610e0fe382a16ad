// The trainer end to end on a corpus written here: tones standing for letters
// (tests/support/letters_corpus.h), so a tiny DS2 can learn it in a few dozen steps. Also the
// options (command line, JSON and YAML config files, invalid combinations), --init-from, and
// the spectrogram images of the genre task.
#include <catch2/catch.hpp>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <numbers>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "data/audio/decode.h"
#include "data/cache/feature_cache.h"
#include "engine/io/safetensors.h"
#include "engine/ops.h"
#include "engine/random.h"
#include "models/registry.h"
#include "tests/support/audio_files.h"
#include "tests/support/letters_corpus.h"
#include "tests/support/weight_task.h"
#include "tests/train/trainer_test_util.h"
#include "train/config_file.h"
#include "train/loop/metrics_log.h"
#include "train/setup/init_from.h"
#include "train/tasks/class_task.h"
#include "train/tasks/speech_task.h"
#include "train/train_loop.h"

using namespace sonata;
using namespace sonata::testing;
using Catch::Contains;

namespace {

constexpr int kRate = kLettersRate;

std::string write_letters_corpus(const TemporaryFolder& folder, const std::string& name, int count,
                                 unsigned seed) {
  return sonata::testing::write_letters_corpus(folder.path().string(), name, count, seed);
}

TrainerOptions tiny_ds2_options(const std::string& train, const std::string& val) {
  TrainerOptions options;
  options.model = "ds2";
  options.model_config = {{"conv-channels", "4"}, {"hidden", "24"}, {"layers", "1"}};
  options.features.n_mels = 40;
  options.train_manifest = train;
  options.val_manifest = val;
  options.batch_size = 4;
  options.epochs = 12;
  options.lr = 1e-2;
  options.warmup = 1;
  options.beam_width = 4;
  options.progress = "none";
  options.log_every = 3;
  options.workers = 2;
  return options;
}

std::vector<nlohmann::json> read_jsonl(const std::string& path) {
  std::ifstream in(path);
  std::vector<nlohmann::json> records;
  for (std::string line; std::getline(in, line);) records.push_back(nlohmann::json::parse(line));
  return records;
}

}  // namespace

TEST_CASE("trainer options: command line, JSON and YAML configs give the same settings",
          "[trainer]") {
  TemporaryFolder folder("trainer_config");
  write_text(folder.file("run.json"),
             R"({"model": "ds2", "hidden": 64, "batch_size": 8, "lr": 0.002, "sortagrad": true,
                 "train": "a.tsv"})");
  write_text(folder.file("run.yaml"),
             "# a trainer config\nmodel: ds2\nhidden: 64   # units\nbatch-size: 8\nlr: 2e-3\n"
             "sortagrad: true\ntrain: \"a.tsv\"\n");
  const TrainerOptions cli =
      parse_command_line({"--model", "ds2", "--hidden", "64", "--batch-size", "8", "--lr", "0.002",
                          "--sortagrad", "--train", "a.tsv"});
  for (const char* file : {"run.json", "run.yaml"}) {
    INFO(file);
    const TrainerOptions config = parse_command_line({"--config", folder.file(file)});
    CHECK(config.to_json() == cli.to_json());
  }
  CHECK(cli.model_config == std::map<std::string, std::string>{{"hidden", "64"}});
  CHECK(cli.batch_size == 8);
  CHECK(cli.sortagrad);
  // The command line wins over the file.
  const TrainerOptions both =
      parse_command_line({"--config", folder.file("run.yaml"), "--batch-size", "32"});
  CHECK(both.batch_size == 32);
  CHECK(both.lr == 2e-3);
}

TEST_CASE("trainer options: bad config files and combinations get one sentence", "[trainer]") {
  TemporaryFolder folder("trainer_config_bad");
  write_text(folder.file("nested.yaml"), "model: ds2\noptimizer:\n  lr: 3\n");
  CHECK_THROWS_WITH(parse_command_line({"--config", folder.file("nested.yaml")}),
                    Contains("line 3") && Contains("nested"));
  write_text(folder.file("unknown.json"), R"({"batch-sise": 8})");
  CHECK_THROWS_WITH(parse_command_line({"--config", folder.file("unknown.json")}),
                    Contains("batch-sise"));
  write_text(folder.file("broken.json"), R"({"lr": )");
  CHECK_THROWS_WITH(parse_command_line({"--config", folder.file("broken.json")}),
                    Contains("not valid JSON"));

  TrainerOptions options;
  options.train_manifest = "a.tsv";
  options.check();
  auto refused = [](TrainerOptions o, const std::string& words) {
    INFO(words);
    CHECK_THROWS_WITH(o.check(), Contains(words));
  };
  TrainerOptions o = options;
  o.precision = "fp16";
  o.device = "cpu";
  refused(o, "--precision fp16 runs on a GPU only");
  o = options;
  o.model_config = {{"width", "0.5"}};
  refused(o, "--width is an option of vgg19_bn and vgg16_bn, not of ds2");
  o = options;
  o.resume = "auto";
  refused(o, "--resume auto needs --checkpoint-dir");
  o = options;
  o.nesterov = true;
  refused(o, "--nesterov applies to --optimizer sgd");
  o = options;
  o.train_manifest.clear();
  refused(o, "--train is required");
  o = options;
  o.eval_only = true;
  refused(o, "--eval-only needs weights");
  for (const char* steps : {"3", "0:2", "5:4", "2:x", ":"}) {
    o = options;
    o.profile_steps = steps;
    refused(o, "--profile-steps must be A:B");
  }
  o = options;
  o.ddp_comm_dtype = "fp8";
  refused(o, "--ddp-comm-dtype must be same, fp16 or bf16");
  o = options;
  o.bucket_mb = 0;
  refused(o, "--bucket-mb must be positive");
  o = options;
  o.model = "ds2";
  o.speed_perturb = true;
  o.feature_cache = "cache";
  refused(o, "--speed-perturb needs the audio");
  o = options;
  o.model = "ds2";
  o.brightness = 0.2;
  refused(o,
          "--brightness and --contrast apply to image classifiers only (--model vgg19_bn or "
          "vgg16_bn)");

  const TrainerOptions parsed =
      parse_command_line({"--train", "a.tsv", "--profile-steps", "10:12", "--bucket-mb", "4",
                          "--sync-bn", "--ddp-comm-dtype", "bf16", "--find-unused-parameters"});
  CHECK(parsed.profile_range() == std::pair<int64_t, int64_t>{10, 12});
  CHECK(parsed.bucket_mb == 4);
  CHECK(parsed.sync_bn);
  CHECK(parsed.find_unused_parameters);
  CHECK(parsed.ddp_comm_dtype == "bf16");
  CHECK(options.profile_range() == std::pair<int64_t, int64_t>{0, 0});
}

#if SONATA_WITH_SNDFILE
TEST_CASE("trainer: a tiny DS2 learns the tone letters, and reports CER", "[trainer]") {
  TemporaryFolder folder("trainer_letters");
  const std::string train = write_letters_corpus(folder, "train", 24, 1);
  const std::string val = write_letters_corpus(folder, "val", 8, 2);
  TrainerOptions options = tiny_ds2_options(train, val);
  options.metrics = folder.file("metrics.jsonl");
  options.range_times = folder.file("ranges.jsonl");
  manual_seed(options.seed);
  SpeechTask task(options, Vocabulary());
  const TrainResult result = run_training(options, task, Device::cpu());

  CHECK(result.steps == 12 * 6);
  // --range-times: a header, then one line per range with the step's and evaluation's phases.
  const auto ranges = read_jsonl(options.range_times);
  REQUIRE(ranges.size() > 5);
  CHECK(ranges.front()["event"] == "range_times");
  CHECK(ranges.front()["wall_s"].get<double>() > 0);
  std::map<std::string, int64_t> range_calls;
  for (size_t i = 1; i < ranges.size(); ++i)
    range_calls[ranges[i]["name"].get<std::string>()] = ranges[i]["calls"].get<int64_t>();
  CHECK(range_calls["sonata::step"] == result.steps);
  CHECK(range_calls["sonata::step::optimizer"] == result.steps);
  CHECK(range_calls["sonata::eval"] == 12);
  CHECK(range_calls["sonata::eval::greedy_decode"] > 0);
  std::vector<double> losses;
  int evaluations = 0;
  for (const auto& record : read_jsonl(options.metrics)) {
    if (record["event"] == "train") losses.push_back(record["loss"].get<double>());
    if (record["event"] == "eval") ++evaluations;
  }
  CHECK(evaluations == 12);
  REQUIRE(losses.size() == 24);
  INFO("first loss " << losses.front() << ", last " << losses.back());
  CHECK(losses.back() < 0.25 * losses.front());
  // The letters are easy: a model that learned them transcribes most of the held-out clips.
  CHECK(result.last_val.metrics.at("cer") < 0.5);
  CHECK(result.last_val.metrics.count("beam_cer") == 1);
  CHECK(result.last_val.report.size() == 3 * 5);
}
#endif

TEST_CASE("trainer: --init-from loads matching tensors and keeps a replaced head fresh",
          "[trainer]") {
  TemporaryFolder folder("trainer_init_from");
  manual_seed(3);
  auto source = make_model("vgg19_bn", ModelConfig(std::map<std::string, std::string>{
                                           {"width", "0.0625"}, {"num-classes", "10"}}));
  save_safetensors(folder.file("w.safetensors"), source->state_dict());
  manual_seed(4);
  auto target = make_model("vgg19_bn", ModelConfig(std::map<std::string, std::string>{
                                           {"width", "0.0625"}, {"num-classes", "16"}}));
  const Tensor head_before = target->state_dict().back().second.clone();
  const std::string line = init_from_weights(*target, folder.file("w.safetensors"));
  CHECK_THAT(line, Contains("kept fresh (shape differs): classifier.6.weight"));
  const NamedTensors loaded = target->state_dict(), original = source->state_dict();
  for (size_t i = 0; i < loaded.size(); ++i) {
    INFO(loaded[i].first);
    if (loaded[i].first.rfind("classifier.6.", 0) == 0) continue;
    CHECK(loaded[i].second.to(DType::f64).to_vector<double>() ==
          original[i].second.to(DType::f64).to_vector<double>());
  }
  CHECK(target->state_dict().back().second.to_vector<float>() == head_before.to_vector<float>());

  auto ds2 = make_model("ds2", ModelConfig(std::map<std::string, std::string>{{"hidden", "8"}}));
  CHECK_THROWS_WITH(init_from_weights(*ds2, folder.file("w.safetensors")),
                    Contains("another model"));
}

TEST_CASE("trainer: spectrogram images put the high bands on top, within [-1, 1]", "[trainer]") {
  FeatureConfig config;
  config.n_mels = 32;
  config.log = FeatureLog::db;
  config.top_db = 80.0;
  const FeatureExtractor extractor(config);
  std::vector<float> high(kRate), low(kRate);
  for (int i = 0; i < kRate; ++i) {
    high[size_t(i)] = 0.5f * float(std::sin(2 * std::numbers::pi * 6000.0 * i / kRate));
    low[size_t(i)] = 0.5f * float(std::sin(2 * std::numbers::pi * 200.0 * i / kRate));
  }
  for (const auto& [samples, top_is_loud] : {std::pair{&high, true}, std::pair{&low, false}}) {
    const Tensor image = spectrogram_image(*samples, extractor, 48);
    REQUIRE(image.shape() == Shape{32, 48});
    const auto values = image.to_vector<float>();
    double top = 0, bottom = 0;
    for (int64_t x = 0; x < 48; ++x) {
      top += values[size_t(2 * 48 + x)];
      bottom += values[size_t(29 * 48 + x)];
    }
    CHECK((top > bottom) == top_is_loud);
    for (const float v : values) REQUIRE((v >= -1.0f && v <= 1.0f));
    // The loudest bin is 1 before the resize, which interpolates between frames.
    CHECK(*std::max_element(values.begin(), values.end()) > 0.9f);
  }
}

#if SONATA_WITH_SNDFILE
TEST_CASE(
    "trainer: k steps, a checkpoint and --resume give the weights of one straight run, "
    "bit for bit",
    "[trainer]") {
  TemporaryFolder folder("trainer_resume");
  const std::string train = write_letters_corpus(folder, "train", 14, 5);
  TrainerOptions options = tiny_ds2_options(train, "");
  options.epochs = 3;  // 4 batches an epoch (the last one of 2), 12 steps
  options.log_every = 2;

  auto run = [&](TrainerOptions run_options) {
    manual_seed(run_options.seed);
    auto task = std::make_unique<SpeechTask>(run_options, Vocabulary());
    run_training(run_options, *task, Device::cpu());
    return task;
  };
  TrainerOptions straight = options;
  straight.checkpoint_dir = folder.file("straight");
  const auto reference = run(straight);

  for (const int64_t stop : {int64_t(1), int64_t(6)}) {  // mid-epoch, and at step 6 of 12
    INFO("stopped after step " << stop);
    TrainerOptions first = options;
    first.checkpoint_dir = folder.file("split_" + std::to_string(stop));
    first.stop_after = stop;
    run(first);
    TrainerOptions second = first;
    second.stop_after = 0;
    second.resume = "auto";
    const auto resumed = run(second);
    const NamedTensors expected = reference->model().state_dict();
    const NamedTensors actual = resumed->model().state_dict();
    REQUIRE(actual.size() == expected.size());
    for (size_t i = 0; i < actual.size(); ++i) {
      INFO(actual[i].first);
      CHECK(actual[i].second.to(DType::f64).to_vector<double>() ==
            expected[i].second.to(DType::f64).to_vector<double>());
    }
    // The resumed run appended to the first run's log and ended at the same step.
    int64_t last_step = 0;
    for (const auto& record : read_jsonl(first.checkpoint_dir + "/metrics.jsonl"))
      if (record["event"] == "train") last_step = record["step"].get<int64_t>();
    CHECK(last_step == 12);
  }
}

TEST_CASE("trainer: a checkpoint of another vocabulary or model size is refused, naming it",
          "[trainer]") {
  TemporaryFolder folder("trainer_refuse");
  const std::string train = write_letters_corpus(folder, "train", 8, 6);
  TrainerOptions options = tiny_ds2_options(train, "");
  options.epochs = 1;
  options.warmup = 0;
  options.checkpoint_dir = folder.file("run");
  manual_seed(1);
  SpeechTask task(options, Vocabulary());
  run_training(options, task, Device::cpu());

  TrainerOptions resume = options;
  resume.resume = "auto";
  resume.epochs = 2;
  const Vocabulary letters = Vocabulary::from_symbols(U" abc", "test");
  SpeechTask other_vocabulary(resume, letters);
  CHECK_THROWS_WITH(run_training(resume, other_vocabulary, Device::cpu()), Contains("vocabulary"));
  resume.model_config["hidden"] = "32";
  SpeechTask wider(resume, Vocabulary());
  CHECK_THROWS_WITH(run_training(resume, wider, Device::cpu()), Contains("rnn.weight_hh_l0"));
}
#endif

namespace {

// A task whose loss turns NaN from a given batch on: y = w . x with x = NaN then. Batches
// are prepared in order (one ahead, on the loader thread), so a counter numbers them.
class PoisonedTask : public WeightTask {
 public:
  explicit PoisonedTask(int64_t poison_from_batch)
      : WeightTask(4, "poisoned"), poison_from_(poison_from_batch) {}
  int64_t train_items() const override { return 64; }
  std::vector<int64_t> train_lengths() const override { return std::vector<int64_t>(64, 1); }
  // As a speech task samples (the batches this test counts).
  SamplingKind sampling() const override { return SamplingKind::length_buckets; }
  HostBatch prepare(const std::vector<int64_t>& items, int64_t epoch) const override {
    (void)epoch;
    const double value = prepared_++ >= poison_from_ ? std::nan("") : 1.0;
    return {{{"input", full({4}, value), true}}, int64_t(items.size()), 0.0};
  }
  Tensor loss(const LayerValue& output, const std::vector<Tensor>&, Device) override {
    return sum(output.x) * (1.0 / 4.0);
  }

 private:
  int64_t poison_from_;
  mutable std::atomic<int64_t> prepared_{0};
};

}  // namespace

TEST_CASE("trainer: a loss that stays NaN stops the run, and skipped steps leave the weights",
          "[trainer]") {
  TemporaryFolder folder("trainer_nan");
  TrainerOptions options;
  options.model = "ds2";
  options.train_manifest = "unused";
  options.batch_size = 4;
  options.epochs = 4;
  options.optimizer = "sgd";
  options.momentum = 0;
  options.weight_decay = 0;
  options.schedule = "constant";
  options.lr = 0.5;
  options.max_bad_steps = 5;
  options.workers = 1;  // the task numbers batches as they are prepared
  options.log_every = 1;
  options.progress = "none";
  options.checkpoint_dir = folder.file("run");
  options.checkpoint_every = 2;
  options.metrics = folder.file("metrics.jsonl");
  PoisonedTask task(/*poison_from_batch=*/10);
  const TrainResult result = run_training(options, task, Device::cpu());
  CHECK(result.stopped_bad);
  // Steps 11..15 had NaN losses: the fifth stops the run.
  CHECK(result.steps == 15);
  // Ten clean SGD steps of lr 0.5 on d(w . 1 / 4)/dw = 1/4 each, then nothing.
  const auto weights = task.model().state_dict().front().second.to_vector<float>();
  for (const float w : weights) CHECK(w == Approx(1.0 - 10 * 0.5 * 0.25).margin(1e-6));
  CHECK_THAT(result.last_checkpoint, Contains("step-000000000010"));
}

#if SONATA_WITH_SNDFILE
TEST_CASE("trainer: bad clips stop the run naming them, or are skipped and counted", "[trainer]") {
  TemporaryFolder folder("trainer_bad_input");
  std::string manifest =
      "ok_0.wav\tab\nbroken.wav\ta\nsilent.wav\t?!\nlong.wav\tabc\nok_1.wav\tba\n";
  std::mt19937 generator(3);
  write_pcm16_wav(folder.file("ok_0.wav"), letters_audio("ab", generator), kRate);
  write_pcm16_wav(folder.file("ok_1.wav"), letters_audio("ba", generator), kRate);
  write_pcm16_wav(folder.file("silent.wav"), letters_audio("c", generator), kRate);
  write_pcm16_wav(folder.file("long.wav"), std::vector<float>(size_t(3 * kRate), 0.1f), kRate);
  write_text(folder.file("broken.wav"), "RIFF....not a wave file");
  write_text(folder.file("train.tsv"), manifest);

  TrainerOptions options = tiny_ds2_options(folder.file("train.tsv"), "");
  options.max_duration = 2.0;
  CHECK_THROWS_WITH(SpeechTask(options, Vocabulary()), Contains("broken.wav"));
  options.bad_input = "skip";
  const SpeechTask task(options, Vocabulary());
  CHECK(task.train_items() == 2);
  CHECK_THAT(task.describe(), Contains("3 bad clips skipped"));
}
#endif

#if SONATA_WITH_SNDFILE
TEST_CASE("trainer: --feature-cache trains exactly as decoding the audio does", "[trainer]") {
  TemporaryFolder folder("trainer_cache");
  const std::string train = write_letters_corpus(folder, "train", 8, 9);
  TrainerOptions options = tiny_ds2_options(train, "");
  options.epochs = 2;
  options.warmup = 0;
  auto weights_after = [&](const TrainerOptions& run_options) {
    manual_seed(run_options.seed);
    SpeechTask task(run_options, Vocabulary());
    run_training(run_options, task, Device::cpu());
    std::vector<double> values;
    for (const auto& [name, tensor] : task.model().state_dict()) {
      const auto v = tensor.to(DType::f64).to_vector<double>();
      values.insert(values.end(), v.begin(), v.end());
    }
    return values;
  };
  options.metrics = folder.file("decoded.jsonl");
  const std::vector<double> decoded = weights_after(options);

  std::vector<std::string> clips;
  for (int i = 0; i < 8; ++i) clips.push_back(folder.file("train_" + std::to_string(i) + ".wav"));
  featurize_clips(clips, options.features.config(), folder.file("cache"), FeaturizeOptions{});
  options.feature_cache = folder.file("cache");
  options.metrics = folder.file("cached.jsonl");
  CHECK(weights_after(options) == decoded);

  options.features.n_mels = 32;
  options.model_config["conv-channels"] = "4";
  CHECK_THROWS_WITH(SpeechTask(options, Vocabulary()), Contains("n_mels: 40 -> 32"));
}
#endif

#if SONATA_WITH_SNDFILE
TEST_CASE("trainer: --speed-perturb plays each item at 0.9, 1.0 or 1.1, repeatably", "[trainer]") {
  TemporaryFolder folder("trainer_speed");
  const std::string train = write_letters_corpus(folder, "train", 8, 3);
  TrainerOptions options = tiny_ds2_options(train, "");
  options.speed_perturb = true;
  const SpeechTask task(options, Vocabulary());
  TrainerOptions plain_options = options;
  plain_options.speed_perturb = false;
  const SpeechTask plain(plain_options, Vocabulary());
  const std::vector<int64_t> items{0, 1, 2, 3, 4, 5, 6, 7};
  const std::vector<int64_t> base =
      plain.prepare(items, 0)[SpeechBatch::input_lengths].to_vector<int64_t>();
  std::set<int> factors_seen;
  for (int64_t epoch = 0; epoch < 4; ++epoch) {
    const HostBatch batch = task.prepare(items, epoch);
    const std::vector<int64_t> frames = batch[SpeechBatch::input_lengths].to_vector<int64_t>();
    for (size_t i = 0; i < items.size(); ++i) {
      // Frames scale as 1 / factor (the STFT's centre frame and rounding: within 2 frames).
      const double ratio = double(base[i]) / double(frames[i]);
      int matched = 0;
      for (const int percent : {90, 100, 110})
        if (std::abs(double(base[i]) / (percent / 100.0) - double(frames[i])) <= 2) {
          matched = percent;
          factors_seen.insert(percent);
        }
      INFO("epoch " << epoch << ", item " << i << ": " << frames[i] << " frames against " << base[i]
                    << " (ratio " << ratio << ")");
      CHECK(matched != 0);
    }
    // The same (epoch, items) give the same batch: the speed is keyed, not drawn afresh.
    CHECK(task.prepare(items, epoch)[SpeechBatch::input].to_vector<float>() ==
          batch[SpeechBatch::input].to_vector<float>());
  }
  CHECK(factors_seen == std::set<int>{90, 100, 110});
  // Evaluation never perturbs: the plain task's batches are the stored features.
  CHECK(plain.prepare(items, 3)[SpeechBatch::input_lengths].to_vector<int64_t>() == base);
}

TEST_CASE("trainer: --brightness and --contrast jitter training images per epoch", "[trainer]") {
  TemporaryFolder folder("trainer_jitter");
  const std::string manifest = write_tone_tracks(folder.path().string(), 4);
  TrainerOptions options;
  options.model = "vgg19_bn";
  options.model_config = {{"width", "0.0625"}};
  options.train_manifest = manifest;
  options.features.sample_rate = kRate;
  options.slice_seconds = 1.0;
  options.image_height = 16;
  options.image_width = 16;
  options.workers = 1;
  const ClassTask plain(options);
  options.brightness = 0.4;
  options.contrast = 0.4;
  const ClassTask jittered(options);
  const std::vector<int64_t> items{0, 1, 2, 3};
  const std::vector<float> original = plain.prepare(items, 0)[ImageBatch::image].to_vector<float>();
  const std::vector<float> epoch0 =
      jittered.prepare(items, 0)[ImageBatch::image].to_vector<float>();
  const std::vector<float> epoch1 =
      jittered.prepare(items, 1)[ImageBatch::image].to_vector<float>();
  CHECK(epoch0 != original);
  CHECK(epoch0 != epoch1);
  CHECK(jittered.prepare(items, 0)[ImageBatch::image].to_vector<float>() == epoch0);
  for (const float v : epoch0) REQUIRE((v >= -1.0f && v <= 1.0f));
  // The image's three channels carry the same jittered plane.
  const size_t plane = 16 * 16;
  for (size_t c = 1; c < 3; ++c)
    for (size_t k = 0; k < plane; ++k) REQUIRE(epoch0[c * plane + k] == epoch0[k]);
}
#endif

namespace {

std::string file_contents(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

TEST_CASE("metrics log: a resume drops what lies past its step, and a line cut short",
          "[trainer]") {
  TemporaryFolder folder("metrics_drop");
  const std::string path = folder.file("metrics.jsonl");
  const std::string kept =
      "{\"event\":\"train\",\"step\":1}\n"
      "{\"event\":\"eval\",\"split\":\"val\",\"step\":2}\n"
      "not a record, left as it is\n"
      "{\"event\":\"note\"}\n";
  write_text(path, kept +
                       "{\"event\":\"train\",\"step\":3}\n"
                       "{\"event\":\"checkpoint\",\"step\":4,\"path\":\"x\"}\n"
                       "{\"event\":\"train\",\"st");
  {
    MetricsLog log(path, /*append=*/true);
    log.drop_after_step(2);
    log.write({{"event", "train"}, {"step", 3}});
  }
  CHECK(file_contents(path) == kept + "{\"event\":\"train\",\"step\":3}\n");
  CHECK(!std::filesystem::exists(path + ".rewrite"));

  // A whole record that lost only its newline stays, on a line of its own.
  write_text(path, "{\"event\":\"train\",\"step\":1}");
  {
    MetricsLog log(path, /*append=*/true);
    log.drop_after_step(5);
    log.write({{"event", "train"}, {"step", 2}});
  }
  CHECK(file_contents(path) ==
        "{\"event\":\"train\",\"step\":1}\n{\"event\":\"train\",\"step\":2}\n");
}

#if SONATA_WITH_SNDFILE
namespace {

std::unique_ptr<SpeechTask> train_letters(const TrainerOptions& options) {
  manual_seed(options.seed);
  auto task = std::make_unique<SpeechTask>(options, Vocabulary());
  run_training(options, *task, Device::cpu());
  return task;
}

std::vector<std::string> step_folders(const std::string& directory) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(directory)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("step-", 0) == 0) names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

// Every entry under `folder` and what it holds: what a refused resume must leave as it was.
std::map<std::string, std::string> folder_snapshot(const std::string& folder) {
  namespace fs = std::filesystem;
  std::map<std::string, std::string> snapshot;
  for (const auto& entry : fs::recursive_directory_iterator(folder)) {
    const std::string name = fs::relative(entry.path(), folder).string();
    if (entry.is_symlink())
      snapshot[name] = "-> " + fs::read_symlink(entry.path()).string();
    else if (entry.is_regular_file())
      snapshot[name] = file_contents(entry.path().string());
    else
      snapshot[name] = "(folder)";
  }
  return snapshot;
}

// Eight bytes inverted in the middle of a safetensors file's data: its sizes still agree.
void flip_data_bytes(const std::string& path) {
  std::string bytes = file_contents(path);
  uint64_t header = 0;
  for (int i = 7; i >= 0; --i) header = (header << 8) | uint8_t(bytes[size_t(i)]);
  const size_t middle = size_t(8 + header + (bytes.size() - 8 - header) / 2);
  for (size_t i = middle - 4; i < middle + 4; ++i) bytes[i] = char(~bytes[i]);
  write_text(path, bytes);
}

std::vector<nlohmann::json> events(const std::string& metrics, const std::string& event) {
  std::vector<nlohmann::json> found;
  for (const auto& record : read_jsonl(metrics))
    if (record["event"] == event) found.push_back(record);
  return found;
}

}  // namespace

TEST_CASE(
    "trainer: --resume auto refuses a folder of damaged checkpoints, naming each, "
    "and leaves them as they are",
    "[trainer]") {
  TemporaryFolder folder("trainer_resume_all_damaged");
  const std::string train = write_letters_corpus(folder, "train", 8, 6);
  TrainerOptions options = tiny_ds2_options(train, "");
  options.epochs = 2;
  options.checkpoint_dir = folder.file("run");
  train_letters(options);
  const std::vector<std::string> saved = step_folders(options.checkpoint_dir);
  REQUIRE(saved.size() == 2);
  for (const std::string& name : saved) {
    const std::string model = options.checkpoint_dir + "/" + name + "/model.safetensors";
    std::filesystem::resize_file(model, std::filesystem::file_size(model) - 9);
  }
  const auto before = folder_snapshot(options.checkpoint_dir);

  TrainerOptions resume = options;
  resume.resume = "auto";
  resume.epochs = 3;
  std::string message = "(no error)";
  try {
    train_letters(resume);
  } catch (const Error& e) {
    message = e.what();
  }
  CHECK_THAT(message, Contains("--resume auto: ") && Contains("Not starting a fresh run"));
  for (const std::string& name : saved) {
    INFO(name);
    CHECK_THAT(message, Contains("checkpoint '" + options.checkpoint_dir + "/" + name +
                                 "' is unreadable: " + options.checkpoint_dir + "/" + name +
                                 "/model.safetensors"));
  }
  CHECK(folder_snapshot(options.checkpoint_dir) == before);
}

TEST_CASE(
    "trainer: --resume auto falls back past a checkpoint whose bytes changed, says so "
    "in the log, keeps it, and trains on bit for bit",
    "[trainer]") {
  TemporaryFolder folder("trainer_resume_flipped");
  const std::string train = write_letters_corpus(folder, "train", 14, 5);
  TrainerOptions options = tiny_ds2_options(train, "");
  options.epochs = 3;  // 12 steps
  TrainerOptions straight = options;
  straight.metrics = folder.file("straight.jsonl");
  const auto reference = train_letters(straight);

  TrainerOptions first = options;
  first.checkpoint_dir = folder.file("run");
  first.checkpoint_every = 1;
  first.stop_after = 6;
  train_letters(first);
  const std::string newest = first.checkpoint_dir + "/step-000000000006";
  REQUIRE(std::filesystem::exists(first.checkpoint_dir + "/step-000000000005"));
  flip_data_bytes(newest + "/model.safetensors");
  const std::string damaged = file_contents(newest + "/model.safetensors");

  TrainerOptions second = first;
  second.stop_after = 0;
  second.resume = "auto";
  const auto resumed = train_letters(second);
  const NamedTensors expected = reference->model().state_dict();
  const NamedTensors actual = resumed->model().state_dict();
  REQUIRE(actual.size() == expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    INFO(actual[i].first);
    CHECK(actual[i].second.to(DType::f64).to_vector<double>() ==
          expected[i].second.to(DType::f64).to_vector<double>());
  }
  const auto resumes = events(first.checkpoint_dir + "/metrics.jsonl", "resume");
  REQUIRE(resumes.size() == 1);
  CHECK(resumes[0]["step"] == 5);
  CHECK(resumes[0]["checkpoint"] == first.checkpoint_dir + "/step-000000000005");
  REQUIRE(resumes[0]["skipped"].size() == 1);
  const std::string skipped = resumes[0]["skipped"][0].get<std::string>();
  CHECK_THAT(skipped, Contains(newest + "/model.safetensors") &&
                          Contains("do not match the file's checksum"));
  // Step 6 was trained and saved again; the damaged folder stepped aside, as it was.
  CHECK(file_contents(newest + ".damaged/model.safetensors") == damaged);
}

TEST_CASE("trainer: after a kill and --resume auto the metrics log reads as one run", "[trainer]") {
  TemporaryFolder folder("trainer_resume_metrics");
  const std::string train = write_letters_corpus(folder, "train", 14, 5);
  TrainerOptions options = tiny_ds2_options(train, "");
  options.epochs = 3;  // 4 steps an epoch, a checkpoint at each epoch's end
  options.log_every = 1;
  options.checkpoint_dir = folder.file("run");
  train_letters(options);
  // A kill after the checkpoint of step 4, in the middle of a line: the later checkpoints
  // were never written, the log holds what came after.
  REQUIRE(step_folders(options.checkpoint_dir) ==
          std::vector<std::string>{"step-000000000004", "step-000000000008", "step-000000000012"});
  std::filesystem::remove_all(options.checkpoint_dir + "/step-000000000008");
  std::filesystem::remove_all(options.checkpoint_dir + "/step-000000000012");
  const std::string metrics = options.checkpoint_dir + "/metrics.jsonl";
  write_text(metrics, file_contents(metrics) + "{\"event\":\"train\",\"epoch\":2,\"st");

  TrainerOptions resume = options;
  resume.resume = "auto";
  train_letters(resume);
  std::vector<int64_t> train_steps, checkpoint_steps;
  REQUIRE_NOTHROW(read_jsonl(metrics));
  for (const auto& record : events(metrics, "train")) train_steps.push_back(record["step"]);
  for (const auto& record : events(metrics, "checkpoint"))
    checkpoint_steps.push_back(record["step"]);
  CHECK(train_steps == std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  CHECK(checkpoint_steps == std::vector<int64_t>{4, 8, 12});
  const auto resumes = events(metrics, "resume");
  REQUIRE(resumes.size() == 1);
  CHECK(resumes[0]["step"] == 4);
  CHECK(resumes[0]["skipped"].empty());
}
#endif

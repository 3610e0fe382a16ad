// The classification task on image files (CCMusic ships its slices as images): a class folder
// of PNGs read, resized and normalised into the batches, a vgg19_bn trained on them, and the
// refusals (a split of audio and images, jitter, normalisation lists that fit no channel count).
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "engine/random.h"
#include "tests/support/audio_files.h"
#include "tests/support/image_files.h"
#include "train/tasks/class_task.h"
#include "train/train_loop.h"

using namespace sonata;
using namespace sonata::testing;
using Catch::Contains;

#if SONATA_WITH_IMAGE
namespace {

TrainerOptions image_options(const std::string& train, const std::string& val) {
  TrainerOptions options;
  options.model = "vgg19_bn";
  options.model_config = {{"width", "0.0625"}};
  options.train_manifest = train;
  options.val_manifest = val;
  options.image_height = 32;
  options.image_width = 32;
  options.batch_size = 4;
  options.epochs = 6;
  options.lr = 1e-3;
  options.progress = "none";
  options.log_every = 1;
  options.workers = 1;
  return options;
}

}  // namespace

TEST_CASE("trainer: a class folder of PNG images becomes normalised, resized batches",
          "[trainer][image]") {
  TemporaryFolder folder("train_images_batch");
  // 12 x 10 images, so the 32 x 32 items are resized; dark levels 20..60, light 195..235.
  const std::string root = write_two_class_images(folder.file("train"), 3, 12, 10);
  TrainerOptions options = image_options(root, "");
  SECTION("three channels (gray copied), CCMusic's Normalize(0.5, 0.5)") {
    const ClassTask task(options);
    CHECK(task.train_items() == 6);
    const HostBatch batch = task.prepare({0, 5}, 0);
    REQUIRE(batch[ImageBatch::image].shape() == Shape{2, 3, 32, 32});
    CHECK(batch[ImageBatch::label].to_vector<int64_t>() ==
          std::vector<int64_t>{0, 1});  // dark, light
    const auto values = batch[ImageBatch::image].to_vector<float>();
    const size_t item = 3 * 32 * 32;
    // (v / 255 - 0.5) / 0.5: dark within [20, 60] -> [-0.843, -0.529], light [195, 235] ->
    // [0.529, 0.843]; a bilinear resize stays within its neighbours' range.
    for (size_t i = 0; i < item; ++i) {
      REQUIRE(values[i] >= 20 / 127.5f - 1 - 1e-6f);
      REQUIRE(values[i] <= 60 / 127.5f - 1 + 1e-6f);
      REQUIRE(values[item + i] >= 195 / 127.5f - 1 - 1e-6f);
      REQUIRE(values[item + i] <= 235 / 127.5f - 1 + 1e-6f);
    }
  }
  SECTION("RGB images keep their three channels, each with its own mean and std") {
    for (const char* label : {"red", "blue"}) {
      std::filesystem::create_directories(folder.file(str("rgb/", label)));
      std::vector<uint16_t> samples;
      for (int k = 0; k < 6 * 5; ++k) samples.insert(samples.end(), {10, 128, 250});
      write_bytes(folder.file(str("rgb/", label, "/x.png")),
                  png_bytes(6, 5, PngColor::rgb, 8, samples));
    }
    options.train_manifest = folder.file("rgb");
    options.image_mean = {0.0, 0.5, 1.0};
    options.image_std = {1.0, 0.5, 2.0};
    const auto values = ClassTask(options).prepare({0}, 0)[ImageBatch::image].to_vector<float>();
    REQUIRE(values.size() == 3 * 32 * 32);
    const float expected[3] = {10 / 255.0f, (128 / 255.0f - 0.5f) / 0.5f, (250 / 255.0f - 1) / 2};
    for (size_t c = 0; c < 3; ++c)
      for (size_t i = 0; i < 32 * 32; ++i) REQUIRE(values[c * 32 * 32 + i] == Approx(expected[c]));
  }
  SECTION("one channel, mean 0 and std 1: the [0, 1] pixels") {
    options.model_config = {{"width", "0.0625"}, {"in-channels", "1"}};
    options.image_mean = {0.0};
    options.image_std = {1.0};
    const ClassTask task(options);
    const auto values = task.prepare({5}, 0)[ImageBatch::image].to_vector<float>();
    REQUIRE(values.size() == 32 * 32);
    for (const float v : values) REQUIRE((v >= 195 / 255.0f - 1e-6f && v <= 235 / 255.0f + 1e-6f));
  }
}

TEST_CASE("trainer: vgg19_bn trains a few steps on a class folder of tiny images",
          "[trainer][image]") {
  TemporaryFolder folder("train_images_fit");
  const std::string train = write_two_class_images(folder.file("train"), 8, 12, 10);
  TrainerOptions options = image_options(train, train);
  options.epochs = 2;
  options.metrics = folder.file("metrics.jsonl");
  manual_seed(options.seed);
  ClassTask task(options);
  CHECK(task.describe().find("2 classes; train 16 tracks, 16 slices") != std::string::npos);
  const NamedTensors before = task.model().state_dict();
  std::vector<double> first_weights = before[0].second.to(DType::f64).to_vector<double>();
  const TrainResult result = run_training(options, task, Device::cpu());
  CHECK(result.steps == 2 * 4);
  int train_records = 0, eval_records = 0;
  std::ifstream in(options.metrics);
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json record = nlohmann::json::parse(line);
    if (record["event"] == "train") {
      ++train_records;
      CHECK(std::isfinite(record["loss"].get<double>()));
      CHECK_FALSE(record.contains("padding_share"));  // fixed-size images: no padding
    }
    if (record["event"] == "eval") ++eval_records;
  }
  CHECK(train_records == 8);
  CHECK(eval_records == 2);
  const double accuracy = result.last_val.metrics.at("accuracy");
  CHECK((accuracy >= 0 && accuracy <= 1));
  CHECK(task.model().state_dict()[0].second.to(DType::f64).to_vector<double>() != first_weights);
}

TEST_CASE("trainer: image files refuse a mixed split, jitter and misfit Normalize lists",
          "[trainer][image]") {
  TemporaryFolder folder("train_images_refused");
  const std::string root = write_two_class_images(folder.file("train"), 1, 4, 4);
  write_text(folder.file("mixed.tsv"),
             str(root, "/dark/0.png\tdark\n", folder.file("clip.wav"), "\tlight\n"));
  write_pcm16_wav(folder.file("clip.wav"), std::vector<float>(1600, 0.1f), 16000);
  TrainerOptions options = image_options(folder.file("mixed.tsv"), "");
  CHECK_THROWS_WITH(ClassTask(options), Contains("mixes 1 image files with 1 audio files"));
  options = image_options(root, "");
  options.brightness = 0.2;
  CHECK_THROWS_WITH(ClassTask(options), Contains("--brightness and --contrast apply to"));
  options = image_options(root, "");
  options.image_mean = {0.5, 0.5};
  CHECK_THROWS_WITH(ClassTask(options), Contains("--image-mean / --image-std"));
  // A corrupt image is bad input named by its path.
  const std::string bad = str(root, "/dark/0.png");
  write_text(bad, "truncated");
  options = image_options(root, "");
  CHECK_THROWS_WITH(ClassTask(options), Contains(bad));
}
#endif

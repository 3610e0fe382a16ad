// --features cqt in the classification task: each slice becomes a constant-Q image of the
// requested size, different from the mel image of the same audio, and a bad --features value
// is refused naming the flag.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "tests/support/audio_files.h"
#include "tests/train/trainer_test_util.h"
#include "train/tasks/class_task.h"

using namespace sonata;
using namespace sonata::testing;
using Catch::Contains;

TEST_CASE("trainer options: --features takes mel or cqt", "[trainer][cqt]") {
  CHECK(parse_command_line({"--model", "vgg19_bn", "--features", "cqt"}).image_features == "cqt");
  TrainerOptions options =
      parse_command_line({"--model", "vgg19_bn", "--features", "chroma", "--train", "x.tsv"});
  CHECK_THROWS_WITH(options.check(), Contains("--features must be mel or cqt"));
  options = parse_command_line({"--image-mean", "0.485,0.456,0.406", "--image-std", "0.2"});
  CHECK(options.image_mean == std::vector<double>{0.485, 0.456, 0.406});
  CHECK(options.image_std == std::vector<double>{0.2});
}

#if SONATA_WITH_SNDFILE
TEST_CASE("trainer: --features cqt makes constant-Q images of the slices", "[trainer][cqt]") {
  TemporaryFolder folder("train_cqt");
  const std::string manifest = write_tone_tracks(folder.path().string(), 2);  // 16 kHz tones
  TrainerOptions options;
  options.model = "vgg19_bn";
  options.model_config = {{"width", "0.0625"}};
  options.train_manifest = manifest;
  options.features.sample_rate = 16000;
  options.slice_seconds = 1.0;
  options.image_height = 24;
  options.image_width = 20;
  options.workers = 1;
  const std::vector<float> mel =
      ClassTask(options).prepare({0, 1}, 0)[ImageBatch::image].to_vector<float>();
  options.image_features = "cqt";
  const HostBatch batch = ClassTask(options).prepare({0, 1}, 0);
  REQUIRE(batch[ImageBatch::image].shape() == Shape{2, 3, 24, 20});
  const std::vector<float> cqt = batch[ImageBatch::image].to_vector<float>();
  CHECK(cqt != mel);
  for (const float v : cqt) REQUIRE((v >= -1.0f && v <= 1.0f));
  // The 300 Hz tone of track 0 is bin 38 of 84 (C1 * 2^(38.4 / 12)): in the 24-row image row
  // (83 - 38.4 + 0.5) * 24 / 84 - 0.5 = 12.4, louder there than at the top row.
  double row12 = 0, top = 0;
  for (size_t x = 0; x < 20; ++x) {
    row12 += cqt[12 * 20 + x];
    top += cqt[x];
  }
  CHECK(row12 > top);
}
#endif

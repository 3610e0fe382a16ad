// classify on the other inputs the classification task trains on: a checkpoint trained on
// image files (each file one slice, read as the trainer reads it) and one trained on
// constant-Q images of audio (--features cqt). A young model's answers are noise, so each
// command's top labels are checked against the trainer's own --eval-only accuracy on the same
// files with the same weights: they agree only if classify draws the same inputs.
#include <catch2/catch.hpp>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "engine/random.h"
#include "tests/support/audio_files.h"
#include "tests/support/image_files.h"
#include "tools/inference/commands.h"
#include "train/tasks/class_task.h"
#include "train/train_loop.h"

using namespace sonata;
using namespace sonata::testing;

namespace {

struct Answer {
  std::string top_label;
  int64_t top_votes = 0, slices = 0;
};

// classify --top-k 1 on `files`: each file's best label and its votes.
std::vector<Answer> classify_files(const std::string& checkpoint,
                                   const std::vector<std::string>& files) {
  std::vector<std::string> arguments = {"classify", "--checkpoint", checkpoint, "--top-k", "1"};
  arguments.insert(arguments.end(), files.begin(), files.end());
  std::vector<const char*> argv;
  for (const std::string& argument : arguments) argv.push_back(argument.c_str());
  std::ostringstream out, err;
  const int code = classify_command(int(argv.size()), argv.data(), out, err);
  INFO(err.str());
  REQUIRE(code == 0);
  std::vector<Answer> answers;
  std::istringstream lines(out.str());
  for (std::string line; std::getline(lines, line);) {
    const size_t tab = line.find('\t');
    REQUIRE(tab != std::string::npos);
    CHECK(line.substr(0, tab) == files[answers.size()]);
    std::istringstream score(line.substr(tab + 1));
    Answer answer;
    std::string fraction;
    double mean = -1;
    score >> answer.top_label >> fraction >> mean;
    answer.top_votes = std::stoll(fraction);
    answer.slices = std::stoll(fraction.substr(fraction.find('/') + 1));
    CHECK((mean >= 0 && mean <= 1));
    answers.push_back(answer);
  }
  REQUIRE(answers.size() == files.size());
  return answers;
}

// classify on `files`, expecting the one at `refused` alone to be refused as of the wrong kind:
// the others answered, one error line naming it and what the model was trained on.
void check_wrong_kind_refused(const std::string& checkpoint, const std::vector<std::string>& files,
                              size_t refused, const std::string& trained_on) {
  std::vector<std::string> arguments = {"classify", "--checkpoint", checkpoint};
  arguments.insert(arguments.end(), files.begin(), files.end());
  std::vector<const char*> argv;
  for (const std::string& argument : arguments) argv.push_back(argument.c_str());
  std::ostringstream out, err;
  const int code = classify_command(int(argv.size()), argv.data(), out, err);
  INFO(out.str());
  INFO(err.str());
  CHECK(code == 1);
  const std::string text = out.str();
  CHECK(std::count(text.begin(), text.end(), '\n') == int64_t(files.size()) - 1);
  CHECK(text.find(files[refused]) == std::string::npos);
  CHECK_THAT(err.str(), Catch::Contains("'" + files[refused] + "' is ") &&
                            Catch::Contains("was trained on " + trained_on));
}

// The trainer's accuracy and track accuracy on `manifest` with the weights of `checkpoint`.
std::pair<double, double> trainer_accuracy(TrainerOptions options, const std::string& checkpoint,
                                           const std::string& manifest,
                                           const std::string& metrics) {
  options.train_manifest.clear();
  options.val_manifest = manifest;
  options.eval_only = true;
  options.resume = checkpoint;
  options.checkpoint_dir.clear();
  options.metrics = metrics;
  ClassTask task(options);
  const TrainResult result = run_training(options, task, Device::cpu());
  return {result.last_val.metrics.at("accuracy"), result.last_val.metrics.at("track_accuracy")};
}

}  // namespace

TEST_CASE("classify: a checkpoint trained with --features cqt votes its constant-Q slices",
          "[inference][cqt]") {
  TemporaryFolder folder("classify_cqt");
  const std::string train = write_tone_tracks(folder.path().string(), 4);
  TrainerOptions options;
  options.model = "vgg19_bn";
  options.model_config = {{"width", "0.0625"}, {"in-channels", "1"}, {"dropout", "0"}};
  options.train_manifest = train;
  options.features.sample_rate = 16000;
  options.image_features = "cqt";
  options.slice_seconds = 0.5;
  options.image_height = 32;
  options.image_width = 32;
  options.batch_size = 4;
  options.epochs = 3;
  options.lr = 3e-3;
  options.progress = "none";
  options.workers = 1;
  options.checkpoint_dir = folder.file("run");
  options.metrics = folder.file("train.jsonl");
  manual_seed(options.seed);
  {
    ClassTask task(options);
    run_training(options, task, Device::cpu());
  }
  // Two-second tones at 8 kHz (four slices each, resampled to the trained 16 kHz).
  const std::string tones = write_tones(folder.path().string(), "tones", 4, 8000, 2.0);
  std::vector<std::string> files, truth;
  for (int track = 0; track < 4; ++track) {
    files.push_back(folder.file("tones_" + std::to_string(track) + ".wav"));
    truth.push_back(track % 2 ? "rock" : "jazz");
  }

  const std::vector<Answer> answers = classify_files(folder.file("run"), files);
  int64_t correct_tracks = 0;
  for (size_t i = 0; i < answers.size(); ++i) {
    CHECK(answers[i].slices == 4);
    correct_tracks += answers[i].top_label == truth[i];
  }
  const auto [accuracy, track_accuracy] =
      trainer_accuracy(options, folder.file("run"), tones, folder.file("eval.jsonl"));
  (void)accuracy;
  CHECK(track_accuracy == Approx(double(correct_tracks) / 4));
  // An image file to this model of audio tracks: refused, naming it; the track after it is
  // still classified.
  const std::string image = folder.file("slice.png");
  const std::vector<uint8_t> png =
      png_bytes(32, 32, PngColor::gray, 8, std::vector<uint16_t>(1024, 128));
  write_text(image, std::string(png.begin(), png.end()));
  check_wrong_kind_refused(folder.file("run"), {files[0], image, files[1]}, 1, "audio");
}

#if SONATA_WITH_IMAGE
TEST_CASE("classify: a checkpoint trained on image files reads each image as the trainer does",
          "[inference][image]") {
  TemporaryFolder folder("classify_images");
  const std::string train = write_two_class_images(folder.file("train"), 4, 12, 10);
  TrainerOptions options;
  options.model = "vgg19_bn";
  options.model_config = {{"width", "0.0625"}, {"in-channels", "3"}, {"dropout", "0"}};
  options.train_manifest = train;
  options.image_height = 32;  // five 2x2 poolings
  options.image_width = 32;
  options.image_mean = {0.4};
  options.image_std = {0.3};
  options.batch_size = 4;
  options.epochs = 2;
  options.lr = 1e-3;
  options.progress = "none";
  options.workers = 1;
  options.checkpoint_dir = folder.file("run");
  options.metrics = folder.file("train.jsonl");
  manual_seed(options.seed);
  {
    ClassTask task(options);
    run_training(options, task, Device::cpu());
  }
  // Unseen images of both classes, at another size than the training ones.
  const std::string unseen = write_two_class_images(folder.file("unseen"), 3, 20, 14);
  std::vector<std::string> files, truth;
  std::string manifest;
  for (const char* label : {"dark", "light"})
    for (int i = 0; i < 3; ++i) {
      files.push_back(unseen + "/" + label + "/" + std::to_string(i) + ".png");
      truth.push_back(label);
      manifest += files.back() + "\t" + label + "\n";
    }
  write_text(folder.file("unseen.tsv"), manifest);

  const std::vector<Answer> answers = classify_files(folder.file("run"), files);
  int64_t correct = 0;
  for (size_t i = 0; i < answers.size(); ++i) {
    CHECK(answers[i].slices == 1);
    CHECK(answers[i].top_votes == 1);
    correct += answers[i].top_label == truth[i];
  }
  const auto [accuracy, track_accuracy] = trainer_accuracy(
      options, folder.file("run"), folder.file("unseen.tsv"), folder.file("eval.jsonl"));
  CHECK(accuracy == Approx(double(correct) / 6));
  CHECK(track_accuracy == Approx(double(correct) / 6));
  // An audio track to this model of image files: refused, naming it.
  write_pcm16_wav(folder.file("track.wav"), std::vector<float>(4 * 16000, 0.1f), 16000);
  check_wrong_kind_refused(folder.file("run"), {files[0], folder.file("track.wav")}, 1,
                           "image files");
}
#endif

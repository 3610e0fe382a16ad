// A model registered after the first of its family (vgg16_bn, an image classifier) goes
// through the trainer and the inference tools by its family alone: the trainer's task, its
// checkpoint under its own name, classify reading it, transcribe refusing it.
#include <catch2/catch.hpp>

#include <sstream>
#include <string>
#include <vector>

#include "engine/random.h"
#include "tests/support/audio_files.h"
#include "tools/inference/commands.h"
#include "tools/inference/trained_checkpoint.h"
#include "train/tasks/class_task.h"
#include "train/tasks/make_task.h"
#include "train/train_loop.h"

using namespace sonata;
using namespace sonata::testing;
using Catch::Contains;

namespace {

struct Run {
  int code = -1;
  std::string out, err;
};

Run run(int (*command)(int, const char* const*, std::ostream&, std::ostream&),
        std::vector<std::string> arguments) {
  arguments.insert(arguments.begin(), "command");
  std::vector<const char*> argv;
  for (const std::string& argument : arguments) argv.push_back(argument.c_str());
  std::ostringstream out, err;
  Run result;
  result.code = command(int(argv.size()), argv.data(), out, err);
  result.out = out.str();
  result.err = err.str();
  return result;
}

}  // namespace

TEST_CASE("vgg16_bn trains with the image task and classify reads its checkpoint",
          "[inference][models]") {
  TemporaryFolder folder("vgg16_checkpoint");
  const std::string train = write_tone_tracks(folder.path().string(), 4);
  TrainerOptions options;
  options.model = "vgg16_bn";
  options.model_config = {{"width", "0.0625"}, {"in-channels", "1"}, {"dropout", "0"}};
  options.train_manifest = train;
  options.features.sample_rate = 16000;
  options.slice_seconds = 0.5;
  options.image_height = 32;
  options.image_width = 32;
  options.batch_size = 4;
  options.epochs = 2;
  options.progress = "none";
  options.workers = 1;
  options.checkpoint_dir = folder.file("run");
  options.check();
  manual_seed(options.seed);
  {
    const std::unique_ptr<Task> task = make_task(options);
    REQUIRE(dynamic_cast<ClassTask*>(task.get()));
    CHECK_THAT(task->describe(), Contains("vgg16_bn ("));
    // 13 convolutions of the narrow configuration D: its parameters, not vgg19_bn's.
    int64_t convs = 0;
    for (const auto& [name, p] : task->model().named_parameters())
      convs += name.starts_with("features.") && p.dim() == 4;
    CHECK(convs == 13);
    const TrainResult result = run_training(options, *task, Device::cpu());
    CHECK(result.steps > 0);
    CHECK_FALSE(result.stopped_bad);
  }
  const TrainedCheckpoint checkpoint = read_trained_checkpoint(folder.file("run"));
  CHECK(checkpoint.model == "vgg16_bn");

  const std::string clip = folder.file("train_0.wav");
  const Run classified = run(classify_command, {"--checkpoint", folder.file("run"), clip});
  INFO(classified.err);
  CHECK(classified.code == 0);
  CHECK_THAT(classified.out, Contains(clip));
  const Run transcribed = run(transcribe_command, {"--checkpoint", folder.file("run"), clip});
  CHECK(transcribed.code == 1);
  CHECK_THAT(transcribed.err,
             Contains("is a vgg16_bn classification checkpoint (use classify), and transcribe "
                      "needs a ds2 speech-recognition checkpoint"));
}

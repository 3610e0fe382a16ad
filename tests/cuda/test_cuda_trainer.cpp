// The trainer on the CUDA device (the whole step: loader staging, features, forward, loss,
// backward, optimizer, checkpoint) trains what it trains on the CPU, within rounding, for a
// tiny DS2 (convolutions, BiLSTM, CTC, mel features on the device) and a tiny VGG19_BN
// (BatchNorm, pooling, cross entropy, gradient accumulation); and a CUDA run stopped after two
// steps and resumed from its checkpoint ends where the unbroken CUDA run ends.
#include <catch2/catch.hpp>

#include <filesystem>
#include <memory>
#include <string>

#include "base/math_mode.h"
#include "engine/random.h"
#include "tests/support/audio_files.h"
#include "tests/support/letters_corpus.h"
#include "tests/support/state_compare.h"
#include "tests/support/tiny_ds2.h"
#include "train/tasks/class_task.h"
#include "train/tasks/speech_task.h"
#include "train/train_loop.h"

using namespace sonata;
using sonata::testing::check_close;
using sonata::testing::differs;
using sonata::testing::TemporaryFolder;

namespace {

// Trains (or resumes) a fresh task of the options' model on `device`; returns the task,
// whose model then holds the run's weights (on the CPU for comparison).
template <typename MakeTask>
auto train(const TrainerOptions& options, Device device, MakeTask make_task) {
  manual_seed(options.seed);
  auto task = make_task(options);
  const TrainResult result = run_training(options, *task, device);
  CHECK(!result.stopped_bad);
  CHECK(result.steps > 0);
  task->model().to(Device::cpu());
  return task;
}

// `options` on the CPU and on cuda:0 train to the same weights; a CUDA run stopped after 2
// steps and resumed ends where the unbroken CUDA run ends.
template <typename MakeTask>
void check_cuda_matches_cpu(TrainerOptions options, const TemporaryFolder& folder,
                            MakeTask make_task) {
  // fp32's rounding on both devices: with TF32 convolutions (the default, as PyTorch's) four
  // steps drift by 1e-3, and which algorithm cudnnFind picks (TF32 or not) varies by run.
  const Tf32ModeGuard fp32_rounding(Tf32Mode::off);
  TrainerOptions on_cpu = options;
  on_cpu.metrics = folder.file("cpu.jsonl");
  const auto reference = train(on_cpu, Device::cpu(), make_task);
  manual_seed(options.seed);
  const auto initial = make_task(options);
  REQUIRE(differs(reference->model(), initial->model()));

  TrainerOptions on_cuda = options;
  on_cuda.metrics = folder.file("cuda.jsonl");
  const auto straight = train(on_cuda, Device::cuda(0), make_task);
  check_close(straight->model(), reference->model(), true);

  TrainerOptions split = options;
  split.checkpoint_dir = folder.file("split");
  split.metrics = folder.file("split.jsonl");
  split.stop_after = 2;
  train(split, Device::cuda(0), make_task);
  split.stop_after = 0;
  split.resume = "auto";
  check_close(train(split, Device::cuda(0), make_task)->model(), straight->model(), true);
}

}  // namespace

TEST_CASE("trainer --device cuda: a tiny DS2 trains as on the CPU and resumes", "[cuda][trainer]") {
  TemporaryFolder folder("cuda_trainer_ds2");
  std::filesystem::create_directories(folder.file("corpus"));
  const std::string train_manifest =
      sonata::testing::write_letters_corpus(folder.file("corpus"), "train", 8, 7);
  TrainerOptions options = sonata::testing::tiny_ds2_options(train_manifest);
  options.epochs = 1;  // 4 steps of 2 clips
  options.optimizer = "sgd";
  options.lr = 5e-2;
  options.log_every = 1;
  check_cuda_matches_cpu(options, folder, [](const TrainerOptions& o) {
    return std::make_unique<SpeechTask>(o, Vocabulary());
  });
}

TEST_CASE("trainer --device cuda: a tiny VGG19_BN trains as on the CPU and resumes",
          "[cuda][trainer]") {
  TemporaryFolder folder("cuda_trainer_vgg");
  std::filesystem::create_directories(folder.file("corpus"));
  const std::string train_manifest = sonata::testing::write_tone_tracks(folder.file("corpus"), 8);
  TrainerOptions options = sonata::testing::tiny_vgg_options(train_manifest);
  options.epochs = 2;  // 8 images: 2 steps of 2 micro-batches per epoch
  options.optimizer = "sgd";
  options.lr = 1e-2;
  options.log_every = 1;
  check_cuda_matches_cpu(options, folder,
                         [](const TrainerOptions& o) { return std::make_unique<ClassTask>(o); });
}

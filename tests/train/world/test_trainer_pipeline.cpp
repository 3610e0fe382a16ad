// The trainer under --pipeline-stages: a pipeline over the world (2 or 3 stages) trains the
// weights one process trains with --accum-steps M, hybrid 2 replicas x 2 stages those of a
// 2-process DDP run; a pipelined checkpoint resumes in one process and one process's
// checkpoint resumes into the pipeline. SGD in f32, so that rounding differences (the
// pipeline's ctc_loss on log_softmax against the fused loss, the loss divided by M in
// another order) stay of rounding size. The corpus: tests/support/letters_corpus.h.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <numbers>
#include <string>
#include <vector>

#include "engine/checkpoint/checkpoint.h"
#include "engine/random.h"
#include "tests/comm/comm_group.h"
#include "tests/support/audio_files.h"
#include "tests/support/letters_corpus.h"
#include "tests/support/state_compare.h"
#include "tests/support/tiny_ds2.h"
#include "train/tasks/class_task.h"
#include "train/tasks/speech_task.h"
#include "train/train_loop.h"

using namespace sonata;
using sonata::testing::check_close;
using sonata::testing::check_same_state;
using sonata::testing::comm_group;
using sonata::testing::differs;
using sonata::testing::job_folder;
using sonata::testing::shared_comm_group;

namespace {

TrainerOptions tiny_ds2(const std::string& train, const std::string& corpus) {
  TrainerOptions options = sonata::testing::tiny_ds2_options(train);
  options.accum_steps = 2;  // --micro-batches 2
  options.epochs = 2;
  options.optimizer = "sgd";
  options.lr = 5e-2;
  options.log_every = 1;
  options.metrics = corpus + "/metrics.jsonl";
  return options;
}

// Trains (or resumes) and returns the task, whose model then holds the run's weights.
std::unique_ptr<SpeechTask> train(const TrainerOptions& options,
                                  std::shared_ptr<ProcessGroup> group) {
  manual_seed(options.seed);
  auto task = std::make_unique<SpeechTask>(options, Vocabulary());
  const TrainResult result = run_training(options, *task, Device::cpu(), std::move(group));
  CHECK(!result.stopped_bad);
  return task;
}

}  // namespace

TEST_CASE(
    "trainer --pipeline-stages trains what one process (or DDP) trains, and its "
    "checkpoints cross to one process and back",
    "[comm][trainer][pipeline]") {
  ProcessGroup& world = comm_group();
  const int R = world.world_size();
  if (R < 2 || R > 4) {
    WARN("the pipelined trainer needs 2 to 4 ranks; skipped with " << R);
    return;
  }
  // 2 or 3 ranks: one pipeline over the world. 4: 2 replicas x 2 stages.
  const int64_t stages = R == 4 ? 2 : R;
  const std::string folder = job_folder("run");
  const std::string corpus = folder + "/corpus_" + std::to_string(world.rank());
  std::filesystem::create_directories(corpus);
  const std::string manifest = sonata::testing::write_letters_corpus(corpus, "train", 12, 7);
  TrainerOptions options = tiny_ds2(manifest, corpus);

  // The reference: one process with --accum-steps 2, or (hybrid) 2-process DDP over ranks
  // {0, 2} and {1, 3}, whose shards are the replicas'.
  std::shared_ptr<ProcessGroup> reference_group;
  if (R == 4) reference_group = world.split(world.rank() % 2, world.rank() / 2);
  const bool reference_is_first = !reference_group || reference_group->rank() == 0;
  TrainerOptions single = options;
  single.metrics = corpus + "/single.jsonl";
  const auto reference = train(single, reference_group);
  const auto initial = std::make_unique<SpeechTask>(single, Vocabulary());
  REQUIRE(differs(reference->model(), initial->model()));

  // Both schedules, and 1F1B with the features computed in the step on stage 0.
  for (const std::string schedule : {"1f1b", "gpipe", "1f1b+step"}) {
    INFO(stages << " stages over " << R << " ranks, " << schedule);
    TrainerOptions piped = options;
    piped.pipeline_stages = stages;
    piped.pipeline_schedule = schedule.substr(0, schedule.find('+'));
    if (schedule.ends_with("+step")) piped.features_on = "step";
    piped.metrics =
        corpus + "/piped_" + piped.pipeline_schedule.word() + piped.features_on.word() + ".jsonl";
    const auto result = train(piped, shared_comm_group());
    // Every rank ends with the whole model (replica 0's stages). DDP's buffers are its rank
    // 0's (broadcast before every forward), as the pipeline's are replica 0's.
    check_close(result->model(), reference->model(), reference_is_first);
  }

  if (R < 4) {  // the checkpoint exchanges are with one process
    // A pipelined run (stages balanced by measured time this once) stopped after 2 of its 6
    // steps, mid-epoch, then resumed in one process: it ends where the reference ends.
    TrainerOptions piped = options;
    piped.pipeline_stages = stages;
    piped.pipeline_balance = "time";
    piped.checkpoint_dir = folder + "/piped";  // rank 0 writes; run_training's barrier follows
    piped.stop_after = 2;
    piped.metrics = corpus + "/piped_stop.jsonl";
    train(piped, shared_comm_group());
    TrainerOptions resumed_single = options;
    resumed_single.resume = latest_checkpoint(piped.checkpoint_dir);
    REQUIRE(!resumed_single.resume.empty());
    resumed_single.metrics = corpus + "/resumed_single.jsonl";
    check_close(train(resumed_single, nullptr)->model(), reference->model(), true);

    // One process stopped after 2 steps (each rank its own copy), resumed as a pipeline.
    TrainerOptions first_single = options;
    first_single.checkpoint_dir = corpus + "/single";
    first_single.stop_after = 2;
    first_single.metrics = corpus + "/single_stop.jsonl";
    train(first_single, nullptr);
    TrainerOptions resumed_piped = options;
    resumed_piped.pipeline_stages = stages;
    resumed_piped.resume = latest_checkpoint(first_single.checkpoint_dir);
    resumed_piped.metrics = corpus + "/resumed_piped.jsonl";
    check_close(train(resumed_piped, shared_comm_group())->model(), reference->model(), true);

    // The pipeline's checkpoint (streamed to rank 0 stage by stage) is the one one process
    // wrote after the same steps: names, order, dtypes, shapes, scalars and the texts but
    // the options alike, the values within rounding.
    if (world.rank() == 0) {
      const TrainingState from_pipeline = load_checkpoint(latest_checkpoint(piped.checkpoint_dir));
      const TrainingState from_single =
          load_checkpoint(latest_checkpoint(first_single.checkpoint_dir));
      check_same_state(from_pipeline.model, from_single.model);
      check_same_state(from_pipeline.optimizer.tensors, from_single.optimizer.tensors);
      CHECK(from_pipeline.optimizer.scalars == from_single.optimizer.scalars);
      CHECK(from_pipeline.scalars == from_single.scalars);
      for (const auto& [key, text] : from_single.texts)
        if (key != "config") CHECK(from_pipeline.texts.at(key) == text);
    }

    // And a pipeline resumes from the pipeline's checkpoint, each stage reading its own.
    TrainerOptions resumed_again = options;
    resumed_again.pipeline_stages = stages;
    resumed_again.resume = latest_checkpoint(piped.checkpoint_dir);
    resumed_again.metrics = corpus + "/resumed_again.jsonl";
    check_close(train(resumed_again, shared_comm_group())->model(), reference->model(), true);
  }
  world.barrier()->wait();
  if (world.rank() == 0) std::filesystem::remove_all(folder);
}

TEST_CASE("trainer --pipeline-stages refuses a world it cannot split into stages",
          "[comm][trainer][pipeline]") {
  ProcessGroup& world = comm_group();
  const std::string folder = job_folder("refused");
  const std::string corpus = folder + "/corpus_" + std::to_string(world.rank());
  std::filesystem::create_directories(corpus);
  TrainerOptions options =
      tiny_ds2(sonata::testing::write_letters_corpus(corpus, "train", 4, 3), corpus);
  // One more stage than ranks (and, for 2 and 3 ranks, not a divisor of the world).
  options.pipeline_stages = world.world_size() + 1;
  auto task = std::make_unique<SpeechTask>(options, Vocabulary());
  CHECK_THROWS_WITH(run_training(options, *task, Device::cpu(), shared_comm_group()),
                    Catch::Contains("--pipeline-stages " + std::to_string(options.pipeline_stages) +
                                    " needs a multiple"));
  // Cuts without stages are refused before anything runs.
  if (world.world_size() == 1) {
    options.pipeline_stages = 1;
    options.pipeline_cuts = std::string("2");  // (GCC 12 -Wrestrict false positive on "2")
    CHECK_THROWS_WITH(options.check(), Catch::Contains("--pipeline-cuts needs"));
  }
  world.barrier()->wait();
  if (world.rank() == 0) std::filesystem::remove_all(folder);
}

TEST_CASE("a pipelined resume refuses another model's checkpoint, judged from its header",
          "[comm][trainer][pipeline]") {
  ProcessGroup& world = comm_group();
  const int R = world.world_size();
  if (R < 2 || R > 4) return;
  const std::string folder = job_folder("refused_resume");
  const std::string corpus = folder + "/corpus_" + std::to_string(world.rank());
  std::filesystem::create_directories(corpus);
  TrainerOptions options =
      tiny_ds2(sonata::testing::write_letters_corpus(corpus, "train", 4, 3), corpus);
  options.pipeline_stages = R == 4 ? 2 : R;
  options.checkpoint_dir = folder + "/checkpoints";
  options.stop_after = 1;
  train(options, shared_comm_group());

  // Each stage reads its own tensors only, yet every stage refuses the whole mismatch.
  TrainerOptions other = options;
  other.checkpoint_dir.clear();
  other.stop_after = 0;
  other.resume = latest_checkpoint(options.checkpoint_dir);
  REQUIRE(!other.resume.empty());
  other.model_config["hidden"] = "8";
  other.metrics = corpus + "/other.jsonl";
  auto task = std::make_unique<SpeechTask>(other, Vocabulary());
  CHECK_THROWS_WITH(run_training(other, *task, Device::cpu(), shared_comm_group()),
                    Catch::Contains("the checkpoint does not fit this model") &&
                        Catch::Contains("in the checkpoint but f32"));
  world.barrier()->wait();
  if (world.rank() == 0) std::filesystem::remove_all(folder);
}

TEST_CASE("trainer --pipeline-stages trains vgg19_bn as one process does",
          "[comm][trainer][pipeline]") {
  ProcessGroup& world = comm_group();
  const int R = world.world_size();
  if (R < 2 || R > 3) return;  // the speech case above covers 1 and 4 ranks
  const std::string folder = job_folder("vgg");
  const std::string corpus = folder + "/corpus_" + std::to_string(world.rank());
  std::filesystem::create_directories(corpus);
  const std::string manifest = sonata::testing::write_tone_tracks(corpus, 8);  // 8 images
  TrainerOptions options = sonata::testing::tiny_vgg_options(manifest);
  options.epochs = 1;
  options.optimizer = "sgd";
  options.lr = 1e-2;
  auto run = [&](TrainerOptions run_options, std::shared_ptr<ProcessGroup> group) {
    manual_seed(run_options.seed);
    auto task = std::make_unique<ClassTask>(run_options);
    run_training(run_options, *task, Device::cpu(), std::move(group));
    return task;
  };
  TrainerOptions single = options;
  single.metrics = corpus + "/single.jsonl";
  const auto reference = run(single, nullptr);
  manual_seed(single.seed);
  const auto initial = std::make_unique<ClassTask>(single);
  REQUIRE(differs(reference->model(), initial->model()));
  TrainerOptions piped = options;
  piped.pipeline_stages = R;
  piped.metrics = corpus + "/piped.jsonl";
  check_close(run(piped, shared_comm_group())->model(), reference->model(), true);
  world.barrier()->wait();
  if (world.rank() == 0) std::filesystem::remove_all(folder);
}

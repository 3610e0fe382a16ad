// A folder that holds a run is written only by a run that continues it (train/run_folder.h),
// and its lock (train/checkpoint_dir_lock.h) cannot be walked around by deleting its file nor
// turned into a write outside the folder by a symbolic link. End to end, through
// run_training, as the trainer command runs.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "engine/random.h"
#include "tests/support/audio_files.h"
#include "tests/support/error_of.h"
#include "tests/support/letters_corpus.h"
#include "tests/support/tiny_ds2.h"
#include "train/state/checkpoint_dir_lock.h"
#include "train/tasks/speech_task.h"
#include "train/train_loop.h"

#if SONATA_WITH_SNDFILE
using namespace sonata;
using namespace sonata::testing;
using Catch::Contains;
namespace fs = std::filesystem;

namespace {

std::string contents(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::set<std::string> step_folders(const std::string& folder) {
  std::set<std::string> names;
  for (const auto& entry : fs::directory_iterator(folder))
    if (entry.path().filename().string().rfind("step-", 0) == 0)
      names.insert(entry.path().filename().string());
  return names;
}

TrainResult train(const TrainerOptions& options) {
  manual_seed(options.seed);
  SpeechTask task(options, Vocabulary());
  return run_training(options, task, Device::cpu());
}

}  // namespace

TEST_CASE(
    "trainer: a run not resumed is refused in a folder holding another run, --overwrite "
    "moves that run aside, and --resume auto then continues the new one",
    "[trainer][run_folder]") {
  TemporaryFolder folder("run_folder_overwrite");
  const std::string manifest = write_letters_corpus(folder.path().string(), "train", 6, 3);
  // 3 steps an epoch; checkpoints at steps 2, 3, 4 and 6.
  TrainerOptions first = tiny_ds2_options(manifest);
  first.epochs = 2;
  first.checkpoint_every = 2;
  first.log_every = 1;
  first.checkpoint_dir = folder.file("run");
  const std::string run = first.checkpoint_dir;
  REQUIRE(error_of([&] { train(first); }) == "no error");
  const std::string log = contents(run + "/metrics.jsonl");
  const std::set<std::string> steps = step_folders(run);
  REQUIRE(steps.count("step-000000000006") == 1);

  // The repro: another seed, stopped after 5 steps, in the same folder.
  TrainerOptions second = first;
  second.seed = 2;
  second.stop_after = 5;
  CHECK_THAT(error_of([&] { train(second); }),
             Contains("--checkpoint-dir '" + run + "' holds another run") &&
                 Contains("step-000000000006") && Contains("--resume auto") &&
                 Contains("new --checkpoint-dir") && Contains("--overwrite"));
  CHECK(contents(run + "/metrics.jsonl") == log);
  CHECK(step_folders(run) == steps);

  second.overwrite = true;
  REQUIRE(error_of([&] { train(second); }) == "no error");
  const std::string aside = run + "/previous-run-1";
  CHECK(contents(aside + "/metrics.jsonl") == log);
  CHECK(step_folders(aside) == steps);
  CHECK(step_folders(run).count("step-000000000005") == 1);
  CHECK(step_folders(run).count("step-000000000006") == 0);

  // --resume auto continues the new run (step 5), not the one moved aside (step 6).
  TrainerOptions resumed = second;
  resumed.overwrite = false;
  resumed.stop_after = 0;
  resumed.resume = "auto";
  REQUIRE(error_of([&] { train(resumed); }) == "no error");
  CHECK_THAT(
      contents(run + "/metrics.jsonl"),
      Contains("\"event\":\"resume\",\"step\":5,\"checkpoint\":\"" + run + "/step-000000000005\""));
  CHECK(contents(aside + "/metrics.jsonl") == log);
}

TEST_CASE("trainer: a deleted trainer.lock lets no second trainer into a folder in use",
          "[trainer][lock][run_folder]") {
  TemporaryFolder folder("run_folder_deleted_lock");
  const std::string manifest = write_letters_corpus(folder.path().string(), "train", 4, 3);
  TrainerOptions options = tiny_ds2_options(manifest);
  options.max_steps = 1;
  options.checkpoint_dir = folder.file("run");
  const std::string lock_file = options.checkpoint_dir + "/" + CheckpointDirLock::kFileName;
  {
    // The first trainer's lock, as it holds it; then the natural reaction to "in use".
    CheckpointDirLock holder(options.checkpoint_dir);
    REQUIRE(::unlink(lock_file.c_str()) == 0);
    CHECK_THAT(
        error_of([&] { train(options); }),
        Contains("--checkpoint-dir '" + options.checkpoint_dir + "' is in use by another trainer"));
    CHECK(!fs::exists(options.checkpoint_dir + "/metrics.jsonl"));
    CHECK(step_folders(options.checkpoint_dir).empty());
  }
  CHECK(error_of([&] { train(options); }) == "no error");
}

TEST_CASE("trainer: a trainer.lock that is a symbolic link is refused, its target untouched",
          "[trainer][lock][run_folder]") {
  TemporaryFolder folder("run_folder_linked_lock");
  const std::string manifest = write_letters_corpus(folder.path().string(), "train", 4, 3);
  TrainerOptions options = tiny_ds2_options(manifest);
  options.max_steps = 1;
  options.checkpoint_dir = folder.file("run");
  fs::create_directories(options.checkpoint_dir);
  const std::string precious = folder.file("precious.txt");
  write_text(precious, "not the trainer's\n");
  const std::string lock_file = options.checkpoint_dir + "/" + CheckpointDirLock::kFileName;
  fs::create_symlink(precious, lock_file);
  CHECK_THAT(error_of([&] { train(options); }),
             Contains("its lock file " + lock_file + " is a symbolic link"));
  CHECK(contents(precious) == "not the trainer's\n");
  CHECK(!fs::exists(options.checkpoint_dir + "/metrics.jsonl"));
}
#endif

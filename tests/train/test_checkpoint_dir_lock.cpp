// One run per --checkpoint-dir (train/checkpoint_dir_lock.h): a second trainer on a
// folder in use is refused naming the folder and the holder's pid, before it touches the
// first run's metrics.jsonl; a holder killed with SIGKILL leaves no stuck lock.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "base/error.h"
#include "engine/random.h"
#include "tests/support/audio_files.h"
#include "tests/support/error_of.h"
#include "tests/support/letters_corpus.h"
#include "tests/support/tiny_ds2.h"
#include "train/state/checkpoint_dir_lock.h"
#include "train/tasks/speech_task.h"
#include "train/train_loop.h"

using namespace sonata;
using namespace sonata::testing;
using Catch::Contains;

namespace {

std::string contents(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A child process that takes the folder's lock as a trainer does and then waits to be killed;
// returns once it holds the lock. Only system calls after fork (the parent has threads).
pid_t start_holder(const std::string& folder) {
  const std::string path = folder + "/" + CheckpointDirLock::kFileName;
  int ready[2];
  REQUIRE(pipe(ready) == 0);
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    const int fd = open(path.c_str(), O_RDWR | O_CREAT, 0644);
    if (fd < 0 || flock(fd, LOCK_EX) != 0) _exit(1);
    char pid[32];
    const int length = snprintf(pid, sizeof pid, "%d\n", int(getpid()));
    if (ftruncate(fd, 0) != 0 || write(fd, pid, size_t(length)) != length) _exit(1);
    if (write(ready[1], "x", 1) != 1) _exit(1);
    for (;;) pause();
  }
  close(ready[1]);
  char byte = 0;
  REQUIRE(read(ready[0], &byte, 1) == 1);
  close(ready[0]);
  return child;
}

}  // namespace

TEST_CASE("checkpoint folder lock: one holder, refused naming the folder and pid, freed on exit",
          "[trainer][lock]") {
  TemporaryFolder folder("checkpoint_dir_lock");
  const std::string run = folder.file("run");
  {
    CheckpointDirLock held(run);  // creates the folder
    CHECK(std::filesystem::is_directory(run));
    CHECK(contents(run + "/trainer.lock") == std::to_string(getpid()) + "\n");
    CHECK_THAT(error_of([&] { CheckpointDirLock second(run); }),
               Contains("--checkpoint-dir '" + run + "' is in use by another trainer (pid " +
                        std::to_string(getpid()) + ")"));
  }
  CHECK_NOTHROW(CheckpointDirLock(run));
}

#if SONATA_WITH_SNDFILE
TEST_CASE("trainer: a second run on a --checkpoint-dir in use is refused and kill -9 frees it",
          "[trainer][lock]") {
  TemporaryFolder folder("checkpoint_dir_lock_trainer");
  const std::string manifest = write_letters_corpus(folder.path().string(), "train", 6, 3);
  TrainerOptions options = tiny_ds2_options(manifest);
  options.epochs = 1;
  options.checkpoint_dir = folder.file("run");
  std::filesystem::create_directories(options.checkpoint_dir);
  const std::string metrics = options.checkpoint_dir + "/metrics.jsonl";
  { std::ofstream(metrics) << "{\"event\":\"train\",\"step\":1}\n"; }
  const pid_t holder = start_holder(options.checkpoint_dir);
  auto train = [&] {
    manual_seed(options.seed);
    SpeechTask task(options, Vocabulary());
    run_training(options, task, Device::cpu());
  };
  CHECK_THAT(error_of(train),
             Contains("--checkpoint-dir '" + options.checkpoint_dir +
                      "' is in use by another trainer (pid " + std::to_string(holder) + ")"));
  // The first run's log is as it was: the refusal came before the log was opened.
  CHECK(contents(metrics) == "{\"event\":\"train\",\"step\":1}\n");

  REQUIRE(kill(holder, SIGKILL) == 0);
  int status = 0;
  REQUIRE(waitpid(holder, &status, 0) == holder);
  CHECK(error_of(train) == "no error");
  CHECK(std::filesystem::exists(options.checkpoint_dir + "/step-000000000003"));
}
#endif

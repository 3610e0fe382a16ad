// A scheduler's warning (SIGTERM, SIGUSR1) or a first Ctrl-C stops a training run after its
// current step with a checkpoint there (train/stop_signals.h), from which --resume auto ends
// where an uninterrupted run ends, bit for bit; a second SIGINT ends the process at once.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "engine/random.h"
#include "tests/support/audio_files.h"
#include "tests/support/error_of.h"
#include "tests/support/letters_corpus.h"
#include "tests/support/tiny_ds2.h"
#include "train/loop/stop_signals.h"
#include "train/tasks/speech_task.h"
#include "train/train_loop.h"

using namespace sonata;
using namespace sonata::testing;
using Catch::Contains;
namespace fs = std::filesystem;

TEST_CASE("a second SIGINT ends the process at once", "[trainer][signal]") {
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {  // system calls only: the parent has threads
    StopSignals signals;
    raise(SIGINT);
    if (StopSignals::received() != SIGINT) _exit(2);
    raise(SIGINT);
    _exit(3);  // still alive: the second SIGINT was swallowed
  }
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  CHECK(WIFSIGNALED(status));
  CHECK((WIFSIGNALED(status) ? WTERMSIG(status) : -WEXITSTATUS(status)) == SIGINT);
}

#if SONATA_WITH_SNDFILE
namespace {

std::vector<double> weights(Module& model) {
  std::vector<double> values;
  for (const auto& [name, tensor] : model.state_dict()) {
    const auto v = tensor.to(DType::f64).to_vector<double>();
    values.insert(values.end(), v.begin(), v.end());
  }
  return values;
}

std::string contents(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

TEST_CASE(
    "trainer: SIGTERM stops after the current step with a checkpoint, and the resumed "
    "run ends bit for bit as an uninterrupted one",
    "[trainer][signal]") {
  TemporaryFolder folder("stop_signals");
  const std::string manifest = write_letters_corpus(folder.path().string(), "train", 6, 3);
  TrainerOptions options = tiny_ds2_options(manifest);
  options.epochs = 2;  // 6 steps
  options.lr = 1e-2;
  auto run = [&](const TrainerOptions& run_options, TrainResult* result) {
    manual_seed(run_options.seed);
    SpeechTask task(run_options, Vocabulary());
    *result = run_training(run_options, task, Device::cpu());
    return weights(task.model());
  };
  TrainResult result;
  TrainerOptions straight = options;
  straight.checkpoint_dir = folder.file("straight");
  const std::vector<double> reference = run(straight, &result);
  CHECK(result.stopped_by_signal == 0);

  TrainerOptions stopped = options;
  stopped.checkpoint_dir = folder.file("stopped");
  {
    // Delivered before the first step (held by the handlers the run installs as well): the
    // run takes step 1, checkpoints it and stops.
    StopSignals pending;
    REQUIRE(raise(SIGTERM) == 0);
    REQUIRE(StopSignals::received() == SIGTERM);
    run(stopped, &result);
  }
  CHECK(StopSignals::received() == 0);
  CHECK(result.stopped_by_signal == SIGTERM);
  CHECK(result.steps == 1);
  CHECK(result.last_checkpoint == stopped.checkpoint_dir + "/step-000000000001");
  CHECK(fs::is_directory(stopped.checkpoint_dir + "/step-000000000001"));
  CHECK_THAT(contents(stopped.checkpoint_dir + "/metrics.jsonl"),
             Contains(R"({"event":"stop","step":1,"signal":"SIGTERM"})"));

  stopped.resume = "auto";
  CHECK(run(stopped, &result) == reference);
  CHECK(result.stopped_by_signal == 0);
  CHECK(result.steps == 6);
}
#endif

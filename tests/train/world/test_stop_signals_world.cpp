// A stop signal that reaches one rank (Slurm's --signal, or mpirun forwarding SIGUSR1) stops
// every rank after the same step, with one checkpoint there, from which --resume auto ends
// bit for bit where an uninterrupted run of the same world ends (train/stop_signals.h). And
// the trainer command itself, sent SIGTERM in the middle of a run: a sentence, a checkpoint
// and exit status 75.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/random.h"
#include "tests/comm/comm_group.h"
#include "tests/support/letters_corpus.h"
#include "tests/support/tiny_ds2.h"
#include "train/loop/stop_signals.h"
#include "train/tasks/speech_task.h"
#include "train/train_loop.h"

using namespace sonata;
using sonata::testing::comm_group;
using sonata::testing::job_folder;
using sonata::testing::rank_corpus_folder;
using sonata::testing::shared_comm_group;
using sonata::testing::tiny_ds2_options;
namespace fs = std::filesystem;

namespace {

std::vector<double> weights(Module& model) {
  std::vector<double> values;
  for (const auto& [name, tensor] : model.state_dict()) {
    const auto v = tensor.to(DType::f64).to_vector<double>();
    values.insert(values.end(), v.begin(), v.end());
  }
  return values;
}

}  // namespace

TEST_CASE("trainer: SIGUSR1 to one rank stops every rank after the same step, checkpointed",
          "[comm][trainer][signal]") {
  ProcessGroup& group = comm_group();
  const std::string folder = job_folder("stop_signal");
  const std::string corpus = rank_corpus_folder(folder, group.rank());
  TrainerOptions options =
      tiny_ds2_options(sonata::testing::write_letters_corpus(corpus, "train", 12, 7));
  options.epochs = 2;
  options.lr = 1e-2;
  auto run = [&](const TrainerOptions& run_options, TrainResult* result) {
    manual_seed(run_options.seed);
    auto task = std::make_unique<SpeechTask>(run_options, Vocabulary());
    *result = run_training(run_options, *task, Device::cpu(), shared_comm_group());
    return weights(task->model());
  };
  TrainResult result;
  TrainerOptions straight = options;
  straight.checkpoint_dir = folder + "/straight";
  straight.metrics = corpus + "/straight.jsonl";
  const std::vector<double> reference = run(straight, &result);

  // The last rank alone gets the signal, before the first step.
  const bool signalled = group.rank() == group.world_size() - 1;
  TrainerOptions stopped = options;
  stopped.checkpoint_dir = folder + "/stopped";
  stopped.metrics = corpus + "/stopped.jsonl";
  {
    StopSignals pending;
    if (signalled) REQUIRE(raise(SIGUSR1) == 0);
    run(stopped, &result);
  }
  CHECK(result.steps == 1);
  CHECK(result.stopped_by_signal == (signalled ? SIGUSR1 : -1));
  group.barrier()->wait();
  std::vector<std::string> steps;
  for (const auto& entry : fs::directory_iterator(stopped.checkpoint_dir))
    if (entry.path().filename().string().rfind("step-", 0) == 0)
      steps.push_back(entry.path().filename().string());
  CHECK(steps == std::vector<std::string>{"step-000000000001"});

  stopped.resume = "auto";
  CHECK(run(stopped, &result) == reference);
  CHECK(result.stopped_by_signal == 0);
  group.barrier()->wait();
  if (group.rank() == 0) fs::remove_all(folder);
}

#if defined(SONATA_TRAINER)
TEST_CASE(
    "trainer command: SIGTERM in the middle of a run ends it with a sentence, a "
    "checkpoint at the step it names and exit status 75",
    "[comm][trainer][signal]") {
  ProcessGroup& group = comm_group();
  if (group.world_size() > 1) return;  // the command alone; the ranks' agreement is above
  const std::string folder = job_folder("stop_signal_command");
  const std::string manifest =
      sonata::testing::write_letters_corpus(rank_corpus_folder(folder, 0), "train", 8, 5);
  const std::string run = folder + "/run", output = folder + "/output.txt";
  const std::vector<std::string> arguments = {SONATA_TRAINER,
                                              "--model",
                                              "ds2",
                                              "--conv-channels",
                                              "4",
                                              "--hidden",
                                              "16",
                                              "--layers",
                                              "1",
                                              "--n-mels",
                                              "40",
                                              "--batch-size",
                                              "2",
                                              "--workers",
                                              "1",
                                              "--train",
                                              manifest,
                                              "--max-steps",
                                              "400",
                                              "--log-every",
                                              "1",
                                              "--progress",
                                              "none",
                                              "--device",
                                              "cpu",
                                              "--checkpoint-dir",
                                              run};
  std::vector<char*> argv;
  for (const std::string& argument : arguments) argv.push_back(const_cast<char*>(argument.c_str()));
  argv.push_back(nullptr);
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {  // nothing of Catch's may run here
    const int log = open(output.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(log, STDOUT_FILENO);
    dup2(log, STDERR_FILENO);
    execv(argv[0], argv.data());
    _exit(127);
  }
  // Once the run has logged its first step (or ended: then the test fails below).
  int status = 0;
  bool ended = false;
  for (;;) {
    std::ifstream log(run + "/metrics.jsonl");
    const std::string text{std::istreambuf_iterator<char>(log), std::istreambuf_iterator<char>()};
    if (text.find("\"event\":\"train\"") != std::string::npos) break;
    if (waitpid(child, &status, WNOHANG) == child) {
      ended = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  REQUIRE(!ended);
  REQUIRE(kill(child, SIGTERM) == 0);
  REQUIRE(waitpid(child, &status, 0) == child);
  std::ifstream printed(output);
  const std::string text{std::istreambuf_iterator<char>(printed), std::istreambuf_iterator<char>()};
  INFO(text);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 75);
  // The step it names, from the log's "stop" record, is the checkpoint's.
  int64_t stop_step = -1;
  std::ifstream log(run + "/metrics.jsonl");
  for (std::string line; std::getline(log, line);) {
    const nlohmann::json record = nlohmann::json::parse(line, nullptr, false);
    if (record.is_object() && record.value("event", "") == "stop") stop_step = record["step"];
  }
  REQUIRE(stop_step > 0);
  CHECK(stop_step < 400);
  char name[32];
  std::snprintf(name, sizeof name, "step-%012lld", static_cast<long long>(stop_step));
  CHECK(fs::is_directory(run + "/" + name));
  CHECK_THAT(text, Catch::Contains("stopped by SIGTERM after step " + std::to_string(stop_step) +
                                   ": its checkpoint is " + run + "/" + name +
                                   "; continue with --resume auto"));
  fs::remove_all(folder);
}
#endif

// What the trainer command prints when it stops on an error: one line, "trainer: <cause>",
// with no blank line before it and no source location (unless --verbose); under mpiexec the
// cause is printed once, not once per rank, whether it came before MPI started (a bad option
// combination) or after (a missing manifest). And, seen through the same runs, when it
// executes itself again with spinning OpenMP threads (tools/trainer/spinning_threads.h).
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tests/comm/comm_group.h"

using sonata::testing::comm_group;

namespace {

struct Run {
  int exit_code = -1;  // -1: killed after the deadline
  std::string output;  // stdout and stderr together
};

// Environment variables to set in the child (a null value: to unset).
using Environment = std::vector<std::pair<std::string, const char*>>;

// Runs `arguments` (a program and its arguments) with its output in a file; kills its process
// group if it has not ended after `deadline_s`, so that the test can fail but never hang.
Run run_command(const std::vector<std::string>& arguments, double deadline_s,
                const Environment& environment = {}) {
  char log_path[] = "/tmp/sonata_trainer_errors_XXXXXX";
  const int log = mkstemp(log_path);
  REQUIRE(log >= 0);
  std::vector<char*> argv;
  for (const std::string& argument : arguments) argv.push_back(const_cast<char*>(argument.c_str()));
  argv.push_back(nullptr);
  const auto start = std::chrono::steady_clock::now();
  const pid_t child = fork();
  if (child == 0) {  // nothing of Catch's may run here
    setpgid(0, 0);
    setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
    setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
    for (const auto& [name, value] : environment)
      value != nullptr ? setenv(name.c_str(), value, 1) : unsetenv(name.c_str());
    dup2(log, STDOUT_FILENO);
    dup2(log, STDERR_FILENO);
    execv(argv[0], argv.data());
    _exit(127);
  }
  REQUIRE(child > 0);
  setpgid(child, child);
  Run run;
  int status = 0;
  for (;;) {
    const pid_t done = waitpid(child, &status, WNOHANG);
    if (done == child) {
      run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      break;
    }
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() >
        deadline_s) {
      kill(-child, SIGKILL);
      waitpid(child, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  close(log);
  std::ifstream in(log_path);
  std::ostringstream text;
  text << in.rdbuf();
  run.output = text.str();
  std::remove(log_path);
  return run;
}

size_t count(const std::string& text, const std::string& part) {
  size_t found = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++found;
  return found;
}

const std::string kMissing = "/nonexistent/sonata_trainer_errors/train.tsv";

std::vector<std::string> trainer(const std::vector<std::string>& arguments) {
  std::vector<std::string> command{std::string(SONATA_TRAINER)};
  command.insert(command.end(), arguments.begin(), arguments.end());
  return command;
}

std::vector<std::string> under_mpiexec(const std::vector<std::string>& arguments) {
  std::vector<std::string> command{std::string(SONATA_MPIEXEC), "-np", "2"};
  command.insert(command.end(), arguments.begin(), arguments.end());
  return command;
}

}  // namespace

TEST_CASE("trainer errors: one line without a source location, the location with --verbose",
          "[comm][trainer][errors]") {
  if (comm_group().world_size() > 1) return;  // the processes are started here
  const Run run =
      run_command(trainer({"--model", "ds2", "--train", kMissing, "--device", "cpu"}), 60);
  INFO(run.output);
  CHECK(run.exit_code == 1);
  CHECK(run.output.rfind("trainer: ", 0) == 0);  // the first line; no blank line before it
  CHECK(count(run.output, "\n") == 1);
  CHECK(count(run.output, kMissing) == 1);
  CHECK(run.output.find(".cpp:") == std::string::npos);

  const Run verbose = run_command(
      trainer({"--model", "ds2", "--train", kMissing, "--device", "cpu", "--verbose"}), 60);
  INFO(verbose.output);
  CHECK(verbose.exit_code == 1);
  CHECK(verbose.output.find(".cpp:") != std::string::npos);

  // Errors of the command line itself read the same way.
  const Run unknown = run_command(trainer({"--no-such-option"}), 60);
  INFO(unknown.output);
  CHECK(unknown.exit_code != 0);
  CHECK(unknown.output.rfind("trainer: ", 0) == 0);
  CHECK_THAT(unknown.output, Catch::Contains("--no-such-option"));
  CHECK(count(unknown.output, "\n") == 1);
}

TEST_CASE("trainer errors: an option given twice is named", "[comm][trainer][errors]") {
  if (comm_group().world_size() > 1) return;  // the processes are started here
  const Run run = run_command(trainer({"--train", kMissing, "--lr", "0.1", "--lr", "0.2"}), 60);
  INFO(run.output);
  CHECK(run.exit_code != 0);
  CHECK(run.output ==
        "trainer: --lr is given 2 times; give it once (trainer --help lists the "
        "options)\n");
}

TEST_CASE("trainer errors under mpiexec: the cause once, before and after MPI starts",
          "[comm][trainer][errors]") {
  if (comm_group().world_size() > 1) return;  // mpiexec inside mpiexec is not supported
  // After MPI started: every rank misses the manifest; rank 0 ends the job.
  const Run missing = run_command(
      under_mpiexec(trainer({"--model", "ds2", "--train", kMissing, "--device", "cpu"})), 90);
  INFO(missing.output);
  CHECK(missing.exit_code != 0);
  CHECK(missing.exit_code != -1);
  CHECK(count(missing.output, kMissing) == 1);
  CHECK(count(missing.output, "trainer: ") == 1);
  // Before MPI started: an option combination every rank refuses alike.
  const Run refused = run_command(
      under_mpiexec(trainer({"--model", "ds2", "--train", kMissing, "--resume", "auto"})), 90);
  INFO(refused.output);
  CHECK(refused.exit_code != 0);
  CHECK(refused.exit_code != -1);
  CHECK(count(refused.output, "--resume auto needs --checkpoint-dir") == 1);
}

TEST_CASE("trainer: CPU training alone respawns with spinning OpenMP threads, nothing else does",
          "[comm][trainer]") {
  if (comm_group().world_size() > 1) return;  // the processes are started here
  const std::string spinning = "OpenMP threads spin between parallel regions";
  const std::vector<std::string> cpu = {"--model",  "ds2", "--train",  kMissing,
                                        "--device", "cpu", "--verbose"};
  const Run alone = run_command(trainer(cpu), 60, {{"OMP_WAIT_POLICY", nullptr}});
  INFO(alone.output);
  CHECK(alone.exit_code == 1);
  CHECK(count(alone.output, spinning) == 1);
  CHECK(count(alone.output, kMissing) == 1);  // the run went on to the manifest, once

  // The user's policy stands.
  const Run passive = run_command(trainer(cpu), 60, {{"OMP_WAIT_POLICY", "passive"}});
  INFO(passive.output);
  CHECK(passive.exit_code == 1);
  CHECK(count(passive.output, spinning) == 0);

  // Ranks may share cores: no rank spins.
  const Run ranks = run_command(under_mpiexec(trainer(cpu)), 120, {{"OMP_WAIT_POLICY", nullptr}});
  INFO(ranks.output);
  CHECK(ranks.exit_code != 0);
  CHECK(count(ranks.output, kMissing) >= 1);
  CHECK(count(ranks.output, spinning) == 0);
}

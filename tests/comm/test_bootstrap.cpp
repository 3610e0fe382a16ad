// The single group, launcher detection, and failure handling: a rank that fails must end
// the whole job, non-zero, within seconds. The mpiexec-launching test runs only in the
// ctest entry without mpiexec (world size 1), where MPI is not initialised.
#include <mpi.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>

#include "comm/bootstrap.h"
#include "comm/single_group.h"
#include "tests/comm/comm_group.h"

using namespace sonata;
using sonata::testing::comm_group;

namespace {

Launch launch_from(const std::map<std::string, std::string>& env) {
  return detect_launch([&](const char* name) -> const char* {
    const auto at = env.find(name);
    return at == env.end() ? nullptr : at->second.c_str();
  });
}

struct Run {
  int exit_code = -1;  // -1: killed after the deadline
  double seconds = 0;
  std::string output;
};

// Runs mpiexec -np 2 on the abort helper with its output in a file; kills the whole process
// group if it has not ended after `deadline_s`, so this test can fail but never hang.
Run run_abort_helper(const char* mode, double deadline_s, const char* argument = nullptr) {
  char log_path[] = "/tmp/sonata_comm_abort_XXXXXX";
  const int log = mkstemp(log_path);
  REQUIRE(log >= 0);
  const auto start = std::chrono::steady_clock::now();
  const pid_t child = fork();
  if (child == 0) {  // nothing of Catch's may run here
    setpgid(0, 0);
    setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
    setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
    dup2(log, STDOUT_FILENO);
    dup2(log, STDERR_FILENO);
    execl(SONATA_MPIEXEC, SONATA_MPIEXEC, "-np", "2", SONATA_ABORT_HELPER, mode, argument,
          static_cast<char*>(nullptr));
    _exit(127);
  }
  REQUIRE(child > 0);
  setpgid(child, child);
  Run run;
  int status = 0;
  for (;;) {
    const pid_t done = waitpid(child, &status, WNOHANG);
    run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (done == child) {
      run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      break;
    }
    if (run.seconds > deadline_s) {
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

}  // namespace

TEST_CASE("the single group completes every operation at once", "[comm][single]") {
  SingleGroup group;
  CHECK(group.world_size() == 1);
  CHECK(group.rank() == 0);
  CHECK(group.backend() == "single");
  Tensor t = from_vector(std::vector<double>{1.5, -2, 7}, {3}, TensorOptions{}.with(DType::f64));
  auto work = group.all_reduce(t, ReduceOp::avg);
  CHECK(work->completed());
  work->wait();
  CHECK(t.to_vector<double>() == std::vector<double>{1.5, -2, 7});  // the mean of one rank
  group.broadcast(t, 0)->wait();
  CHECK(t.to_vector<double>() == std::vector<double>{1.5, -2, 7});
  Tensor gathered = zeros({3}, TensorOptions{}.with(DType::f64));
  CHECK(group.all_gather(t, gathered)->completed());
  CHECK(gathered.to_vector<double>() == std::vector<double>{1.5, -2, 7});
  Tensor scattered = zeros({3}, TensorOptions{}.with(DType::f64));
  group.reduce_scatter(t, scattered, ReduceOp::sum)->wait();
  CHECK(scattered.to_vector<double>() == std::vector<double>{1.5, -2, 7});
  CHECK(group.barrier()->completed());
  CHECK_THROWS_WITH(group.broadcast(t, 1), Catch::Contains("root 1 is out of range"));
  Tensor ints = zeros({2}, TensorOptions{}.with(DType::i32));
  CHECK_THROWS_WITH(group.all_reduce(ints, ReduceOp::avg), Catch::Contains("avg of i32"));
  Tensor short_out = zeros({2}, TensorOptions{}.with(DType::f64));
  CHECK_THROWS_WITH(group.all_gather(t, short_out), Catch::Contains("out has 2 elements"));
}

TEST_CASE("without a launcher the job is one process and MPI stays uninitialised",
          "[comm][single]") {
  if (comm_group().world_size() > 1) return;  // this run was started by mpiexec
  CHECK(comm_group().backend() == "single");
  CHECK_FALSE(mpi_started());
  int initialized = 1;
  MPI_Initialized(&initialized);
  CHECK(initialized == 0);
}

TEST_CASE("the launcher is read from the environment", "[comm][launch]") {
  CHECK(launch_from({}).launcher.empty());
  CHECK(launch_from({}).world_size == 1);
  const Launch ompi = launch_from({{"OMPI_COMM_WORLD_SIZE", "4"}, {"OMPI_COMM_WORLD_RANK", "2"}});
  CHECK(ompi.launcher == "mpirun");
  CHECK(ompi.world_size == 4);
  CHECK(ompi.rank == 2);
  const Launch srun = launch_from({{"SLURM_STEP_ID", "0"},
                                   {"SLURM_STEP_NUM_TASKS", "8"},
                                   {"SLURM_NTASKS", "16"},
                                   {"SLURM_PROCID", "5"}});
  CHECK(srun.launcher == "srun");
  CHECK(srun.world_size == 8);
  CHECK(srun.rank == 5);
  // A batch script's environment: Slurm's sizes but no job step, so no launcher.
  CHECK(launch_from({{"SLURM_NTASKS", "16"}, {"SLURM_PROCID", "0"}}).launcher.empty());
  const Launch pmix = launch_from({{"PMIX_RANK", "3"}});
  CHECK(pmix.launcher == "pmix");
  CHECK(pmix.world_size == -1);  // PMIx does not say: MPI will
  CHECK(pmix.rank == 3);
  const Launch pmi = launch_from({{"PMI_SIZE", "2"}, {"PMI_RANK", "1"}});
  CHECK(pmi.launcher == "pmi");
  CHECK(pmi.world_size == 2);
  CHECK(pmi.rank == 1);
  CHECK_THROWS_WITH(launch_from({{"OMPI_COMM_WORLD_SIZE", "four"}}),
                    Catch::Contains("OMPI_COMM_WORLD_SIZE='four'"));
}

TEST_CASE("a rank that fails ends the whole mpiexec job within seconds", "[comm][abort]") {
  if (comm_group().world_size() > 1) return;  // mpiexec inside mpiexec is not supported
  for (const char* mode : {"throw", "library"}) {
    INFO("mode " << mode);
    const Run run = run_abort_helper(mode, 30);
    INFO(run.output);
    CHECK(run.exit_code != -1);  // it ended by itself, before the deadline
    CHECK(run.exit_code != 0);
    // The cause, once, with the failing rank in front.
    const std::string cause = std::string(mode) == "throw"
                                  ? "rank 1: uncaught exception: deliberate failure on rank 1"
                                  : "rank 1: MPI error at ";
    CHECK(run.output.find(cause) != std::string::npos);
    if (std::string(mode) == "library") {
      CHECK(run.output.find("abort_helper.cpp") != std::string::npos);
      CHECK(run.output.find("MPI_ERR_RANK") != std::string::npos);
    }
    CHECK(run.output.find("rank 0:") == std::string::npos);
  }
}

TEST_CASE("a stopped rank ends the job after the timeout, naming the collective and the rank",
          "[comm][abort][timeout]") {
  if (comm_group().world_size() > 1) return;  // mpiexec inside mpiexec is not supported
  // Rank 1 stops itself before a barrier; rank 0 waits with a 5 s timeout. The 30 s deadline
  // only bounds the test: ending by itself within it is the behaviour under test.
  const Run run = run_abort_helper("stall", 30, "5");
  INFO(run.output);
  CHECK(run.exit_code != -1);
  CHECK(run.exit_code != 0);
  CHECK(run.output.find("rank 0: barrier on an MPI group of 2 ranks did not complete within 5 s") !=
        std::string::npos);
  CHECK(run.output.find("rank(s) that did not arrive: 1") != std::string::npos);
}

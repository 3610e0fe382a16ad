// The comm tests' main: starts the process group, runs the Catch2 session on every rank,
// then agrees on the exit code, so a failure on any rank fails the run on all of them and
// mpiexec reports it.

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>

#include "comm/bootstrap.h"
#include "engine/device.h"
#include "tests/comm/comm_group.h"
#include "tests/support/catch_runner.h"

namespace sonata::testing {
namespace {
std::shared_ptr<ProcessGroup> g_group;
}
ProcessGroup& comm_group() {
  return *g_group;
}
std::shared_ptr<ProcessGroup> shared_comm_group() {
  return g_group;
}
std::string job_folder(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("sonata_comm_" + name + "_" + std::to_string(::getppid())))
      .string();
}
}  // namespace sonata::testing

int main(int argc, char** argv) {
  using namespace sonata;
  bool listing = false;
  for (int i = 1; i < argc; ++i)
    listing = listing || std::strncmp(argv[i], "--list", 6) == 0 || std::strcmp(argv[i], "-l") == 0;
  if (listing) return sonata::testing::run_catch_session(argc, argv);
  // The GPU-only entry (ctest's cuda/comm_nccl) is reported skipped on a machine without one.
  if (std::getenv("SONATA_TESTS_NEED_GPU") && cuda_device_count() == 0) return 77;

  auto& group = testing::g_group;
  group = init_process_group(Device::cpu());
  const int failed = sonata::testing::run_catch_session(argc, argv);
  Tensor any_failed = from_vector(std::vector<int64_t>{failed != 0 ? 1 : 0}, {1});
  group->all_reduce(any_failed, ReduceOp::sum)->wait();
  const bool ok = any_failed.item() == 0;
  group.reset();
  finalize();
  return ok ? 0 : 1;
}

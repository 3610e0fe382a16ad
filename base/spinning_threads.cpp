#include "base/spinning_threads.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace sonata {
namespace {

// Set in the environment of the re-executed trainer only, so that it knows it was.
constexpr const char* kRespawned = "SONATA_SPINNING_THREADS_RESPAWNED";

}  // namespace

bool spin_openmp_threads(const char* program, char** argv, bool cpu_training_alone, bool verbose) {
  const char* respawned = std::getenv(kRespawned);
  if (respawned != nullptr) {
    // Programs this trainer starts are not re-executed ones.
    unsetenv(kRespawned);
    if (verbose)
      std::printf(
          "%s: OpenMP threads spin between parallel regions (OMP_WAIT_POLICY=active, set "
          "for CPU training in one process; set OMP_WAIT_POLICY to choose)\n",
          program);
    return true;
  }
  if (!cpu_training_alone || std::getenv("OMP_WAIT_POLICY") != nullptr) return false;
  setenv("OMP_WAIT_POLICY", "active", 1);
  setenv(kRespawned, "1", 1);
  std::fflush(stdout);
  execv("/proc/self/exe", argv);
  // Not re-executed (no /proc): train as before, the threads sleeping between regions.
  unsetenv("OMP_WAIT_POLICY");
  unsetenv(kRespawned);
  return false;
}

std::string openmp_wait_policy() {
  const char* policy = std::getenv("OMP_WAIT_POLICY");
  return policy != nullptr ? policy : "default";
}

}  // namespace sonata

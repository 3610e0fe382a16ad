#include "comm/bootstrap.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <exception>

#include "base/error.h"
#include "comm/single_group.h"

#if SONATA_WITH_MPI
#include "base/mpi_check.h"
#include "comm/mpi_group.h"
#endif
#if SONATA_WITH_NCCL
#include "comm/nccl_group.h"
#endif
#if SONATA_WITH_CUDA
#include "engine/cuda/stream.h"
#endif

namespace sonata {
namespace {

std::atomic<bool> g_mpi_started{false};

int parse_count(const char* text, const char* name) {
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  SONATA_CHECK(end != text && *end == '\0' && value >= 0 && value < (1L << 30), "the launcher's ",
               name, "='", text, "' is not a process count or rank");
  return int(value);
}

#if SONATA_WITH_MPI
void terminate_job() {
  std::string cause = "terminated";
  if (std::exception_ptr current = std::current_exception()) {
    try {
      std::rethrow_exception(current);
    } catch (const std::exception& error) {
      cause = str("uncaught exception: ", error.what());
    } catch (...) {
      cause = "uncaught exception of unknown type";
    }
  }
  abort_job(cause);
}

void fatal_handler(const std::string& message) {
  abort_job(message);
}

int node_local_rank(int rank) {
  MPI_Comm node = MPI_COMM_NULL;
  MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node));
  int local_rank = 0;
  MPI_CHECK(MPI_Comm_rank(node, &local_rank));
  MPI_CHECK(MPI_Comm_free(&node));
  return local_rank;
}
#endif

std::shared_ptr<ProcessGroup> single_group(Device device) {
#if SONATA_WITH_CUDA
  if (device.is_cuda()) set_cuda_device(device.index);
#endif
  return std::make_shared<SingleGroup>(device);
}

}  // namespace

Launch detect_launch() {
  return detect_launch([](const char* name) { return std::getenv(name); });
}

Launch detect_launch(const std::function<const char*(const char*)>& getenv) {
  Launch launch;
  auto count = [&](const char* name) { return parse_count(getenv(name), name); };
  const char* slurm_step =
      getenv("SLURM_STEP_ID") ? getenv("SLURM_STEP_ID") : getenv("SLURM_STEPID");
  const char* slurm_size = getenv("SLURM_STEP_NUM_TASKS") ? "SLURM_STEP_NUM_TASKS" : "SLURM_NTASKS";
  if (getenv("OMPI_COMM_WORLD_SIZE")) {
    launch = {"mpirun", count("OMPI_COMM_WORLD_SIZE"),
              getenv("OMPI_COMM_WORLD_RANK") ? count("OMPI_COMM_WORLD_RANK") : 0};
  } else if (getenv("PMIX_RANK")) {
    // PMIx exports no size; under srun Slurm's step size is the world.
    launch = {"pmix", slurm_step && getenv(slurm_size) ? count(slurm_size) : -1,
              count("PMIX_RANK")};
  } else if (getenv("PMI_SIZE")) {
    launch = {"pmi", count("PMI_SIZE"), getenv("PMI_RANK") ? count("PMI_RANK") : 0};
  } else if (slurm_step && getenv(slurm_size)) {
    launch = {"srun", count(slurm_size), getenv("SLURM_PROCID") ? count("SLURM_PROCID") : 0};
  }
  return launch;
}

bool mpi_started() {
  return g_mpi_started;
}

void abort_job(const std::string& message) {
  static std::atomic<bool> printed{false};
  if (!printed.exchange(true)) {
    const int rank = error_rank();
    std::fprintf(stderr, "rank %d: %s\n", rank < 0 ? 0 : rank, message.c_str());
    std::fflush(stderr);
  }
#if SONATA_WITH_NCCL
  abort_nccl_communicators();
#endif
#if SONATA_WITH_MPI
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) MPI_Abort(MPI_COMM_WORLD, 1);
#endif
  std::_Exit(1);
}

std::shared_ptr<ProcessGroup> init_process_group(Device device) {
  const Launch launch = detect_launch();
  if (launch.launcher.empty() || launch.world_size == 1) return single_group(device);
#if SONATA_WITH_MPI
  int initialized = 0;
  MPI_CHECK(MPI_Initialized(&initialized));
  if (!initialized) {
    int provided = MPI_THREAD_SINGLE;
    MPI_CHECK(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided));
    g_mpi_started = true;
    SONATA_CHECK(provided >= MPI_THREAD_FUNNELED,
                 "this MPI provides neither MPI_THREAD_MULTIPLE nor MPI_THREAD_FUNNELED");
  }
  // Errors come back as codes, so that MPI_CHECK reports them with their place and rank.
  MPI_CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  int rank = 0, world_size = 1;
  MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &world_size));
  set_error_rank(rank);
  set_fatal_handler(fatal_handler);
  std::set_terminate(terminate_job);
  const int local_rank = node_local_rank(rank);
  if (world_size == 1) return single_group(device);
  if (device.is_cpu()) return std::make_shared<MpiGroup>(MPI_COMM_WORLD, local_rank);
#if SONATA_WITH_NCCL
  return std::make_shared<NcclGroup>(MPI_COMM_WORLD, local_rank);
#else
  throw Error(str("init_process_group: ", world_size, " processes on ", device.str(),
                  " need NCCL, which this build does not have (CUDA and NCCL: docs/building.md)"));
#endif
#else
  throw Error(str("init_process_group: started by ", launch.launcher, " with ", launch.world_size,
                  " processes, but this build has no MPI ",
                  "(install libopenmpi-dev and rebuild)"));
#endif
}

std::shared_ptr<ProcessGroup> init_one_rank_nccl_group(Device device) {
  SONATA_CHECK(device.is_cuda(), "a one-rank NCCL group needs a CUDA device, not ", device.str());
  const Launch launch = detect_launch();
  SONATA_CHECK(launch.launcher.empty() || launch.world_size == 1,
               "a one-rank NCCL group is for a process alone, but ", launch.launcher,
               " started this one as one of ", launch.world_size,
               " (init_process_group joins them)");
#if SONATA_WITH_NCCL
  return std::make_shared<NcclGroup>(device.index);
#else
  throw Error(
      "a one-rank NCCL group needs NCCL, which this build does not have (CUDA and NCCL: "
      "docs/building.md)");
#endif
}

void finalize() {
#if SONATA_WITH_MPI
  if (!g_mpi_started) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_CHECK(MPI_Finalize());
#endif
}

}  // namespace sonata

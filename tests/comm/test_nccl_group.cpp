// The NCCL group's own behaviour on one GPU, each rank with a communicator of its own
// (MPI_COMM_SELF): the communication stream's priority, and a not-ready poll leaving no CUDA
// error behind. Needs MPI initialised (the mpiexec runs) and a GPU; skipped otherwise.
#include <catch2/catch.hpp>

#if SONATA_WITH_NCCL
#include <cuda_runtime_api.h>
#include <mpi.h>

#include <atomic>
#include <memory>

#include "comm/nccl_group.h"
#include "engine/cuda/stream.h"
#include "engine/device.h"

using namespace sonata;

namespace {

bool nccl_testable() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  return initialized && cuda_device_count() > 0;
}

// Holds the stream it is queued on until `open` is set: work queued behind it stays pending
// for as long as the test wants, with no timing involved.
struct Gate {
  std::atomic<bool> open{false};
};
void CUDART_CB hold_until_open(void* data) {
  auto* gate = static_cast<Gate*>(data);
  while (!gate->open.load()) {
  }
}

}  // namespace

TEST_CASE("the NCCL group communicates on a highest-priority stream", "[comm][nccl]") {
  if (!nccl_testable()) return;
  NcclGroup group(MPI_COMM_SELF, 0);
  int least = 0, greatest = 0, priority = 0;
  REQUIRE(cudaDeviceGetStreamPriorityRange(&least, &greatest) == cudaSuccess);
  REQUIRE(cudaStreamGetPriority(group.stream(), &priority) == cudaSuccess);
  CHECK(priority == greatest);
  CHECK(group.stream_ordered());
}

TEST_CASE("polling an unfinished NCCL operation leaves no CUDA error behind", "[comm][nccl]") {
  if (!nccl_testable()) return;
  NcclGroup group(MPI_COMM_SELF, 0);
  Tensor t = ones({16}, TensorOptions{}.with(group.device()));
  Gate gate;
  // The all-reduce follows the caller's stream, which the gate holds: it cannot finish yet.
  REQUIRE(cudaLaunchHostFunc(current_stream(group.device().index), hold_until_open, &gate) ==
          cudaSuccess);
  auto work = group.all_reduce(t, ReduceOp::sum);
  static_cast<void>(cudaGetLastError());
  CHECK_FALSE(work->completed());
  CHECK(cudaGetLastError() == cudaSuccess);  // not cudaErrorNotReady from the query
  gate.open = true;
  work->synchronize();
  CHECK(work->completed());
  CHECK(t.to_vector<float>() == std::vector<float>(16, 1.0f));
}
#endif

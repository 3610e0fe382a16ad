// Fails on rank 1 while the other ranks wait in an all-reduce that can never finish; the
// comm tests run it under mpiexec and expect the whole job to end, non-zero, within seconds.
//   comm_abort_helper throw    rank 1 throws a sonata::Error nobody catches
//   comm_abort_helper library  rank 1 makes an MPI call fail (a library error)
#include <mpi.h>

#include <chrono>
#include <cstring>
#include <thread>

#include "base/error.h"
#include "base/mpi_check.h"
#include "comm/bootstrap.h"

int main(int argc, char** argv) {
  using namespace sonata;
  const bool library = argc > 1 && std::strcmp(argv[1], "library") == 0;
  auto group = init_process_group(Device::cpu());
  if (group->rank() == 1) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // peers are waiting by now
    if (library) {
      int value = 0;
      MPI_CHECK(MPI_Send(&value, 1, MPI_INT, group->world_size() + 5, 0, MPI_COMM_WORLD));
    }
    throw Error("deliberate failure on rank 1");
  }
  Tensor never = zeros({4});
  group->all_reduce(never, ReduceOp::sum)->wait();
  finalize();
  return 0;
}

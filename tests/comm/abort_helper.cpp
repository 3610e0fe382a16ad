// Fails or stalls on rank 1 while the other ranks wait in a collective that can never finish;
// the comm tests run it under mpiexec and expect the whole job to end, non-zero.
//   comm_abort_helper throw      rank 1 throws a sonata::Error nobody catches
//   comm_abort_helper library    rank 1 makes an MPI call fail (a library error)
//   comm_abort_helper stall S    rank 1 stops itself (SIGSTOP) before a barrier; the others
//                                wait in it with a communication timeout of S seconds
#include <mpi.h>
#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "base/error.h"
#include "base/mpi_check.h"
#include "comm/bootstrap.h"

int main(int argc, char** argv) {
  using namespace sonata;
  const char* mode = argc > 1 ? argv[1] : "throw";
  auto group = init_process_group(Device::cpu());
  if (std::strcmp(mode, "stall") == 0) {
    group->set_timeout(argc > 2 ? std::atof(argv[2]) : 5.0);
    // Stopped before the barrier, so it never arrives; the peers cannot tell it from a hang.
    if (group->rank() == 1) raise(SIGSTOP);
    group->barrier()->wait();
    finalize();
    return 0;
  }
  if (group->rank() == 1) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // peers are waiting by now
    if (std::strcmp(mode, "library") == 0) {
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

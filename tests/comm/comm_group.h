#pragma once
// The process group the comm tests run on: whatever init_process_group gave this run (the
// single group without mpiexec, the MPI group under it).
#include "comm/process_group.h"

namespace sonata::testing {
ProcessGroup& comm_group();
}

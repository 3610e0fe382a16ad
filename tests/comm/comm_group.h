#pragma once
// The process group the comm tests run on: whatever init_process_group gave this run (the
// single group without mpiexec, the MPI group under it).
#include <memory>
#include <string>

#include "comm/process_group.h"

namespace sonata::testing {
ProcessGroup& comm_group();
// The same group as the shared pointer DDP, reducers and the trainer take.
std::shared_ptr<ProcessGroup> shared_comm_group();
// A folder name for the whole job, the same on every rank (mpiexec, or ctest, is every
// rank's parent): temp/sonata_comm_<name>_<parent pid>. Not created.
std::string job_folder(const std::string& name);
}  // namespace sonata::testing

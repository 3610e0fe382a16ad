#pragma once
// Starting and ending a job's communication, in llm.c's style: the launcher (mpirun, srun)
// starts one process per device, MPI gives each its rank and node-local rank, CUDA ranks
// select their device by local rank, and NCCL is bootstrapped over MPI.
#include <functional>
#include <memory>
#include <string>

#include "comm/process_group.h"

namespace sonata {

// What the environment says about how this process was started.
struct Launch {
  std::string launcher;  // "mpirun" (Open MPI), "pmix", "pmi" (MPICH, srun --mpi=pmi2),
                         // "srun", or "" when no launcher started this process
  int world_size = 1;    // -1 when the launcher does not say (PMIx alone): ask MPI
  int rank = 0;
};
// Reads OMPI_COMM_WORLD_SIZE/RANK, PMIX_RANK, PMI_SIZE/RANK, and Slurm's job-step variables
// (SLURM_STEP_ID with SLURM_STEP_NUM_TASKS or SLURM_NTASKS, SLURM_PROCID). A batch script's
// own environment has SLURM_NTASKS but no job step, so it is not mistaken for srun.
Launch detect_launch();
Launch detect_launch(const std::function<const char*(const char*)>& getenv);

// The group for this job: world size 1 (no launcher, or one process) gives the single group
// and leaves MPI uninitialised; otherwise MPI_Init_thread (MPI_THREAD_MULTIPLE if provided,
// else FUNNELED), set_error_rank(rank), and a fatal handler that prints "rank R: <cause>"
// once and aborts every rank (MPI_Abort with exit code 1, NCCL communicators aborted first)
// on a library error or an uncaught exception. CPU devices get the MPI group; CUDA devices
// the NCCL group on cuda:<local rank> (cudaSetDevice before any NCCL call). Call once.
std::shared_ptr<ProcessGroup> init_process_group(Device device);

// A one-rank NCCL group on CUDA `device` for a process that no launcher started with others
// (no MPI needed): the reducer's NCCL path on one GPU. Refused, naming what is missing, on a
// CPU device, in a build without NCCL, or in a process started as one of several.
std::shared_ptr<ProcessGroup> init_one_rank_nccl_group(Device device);

// Ends MPI if init_process_group started it; safe to call when it did not. Groups should be
// destroyed first (an MPI group still alive afterwards skips freeing its communicator).
void finalize();

// Whether init_process_group initialised MPI in this process.
bool mpi_started();

// Prints "rank R: <message>" once and ends the whole job with exit code 1 (MPI_Abort under
// MPI, else this process). The fatal handler; callable for any unrecoverable error.
[[noreturn]] void abort_job(const std::string& message);

}  // namespace sonata

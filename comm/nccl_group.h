#pragma once
// The NCCL process group for CUDA tensors (built with CUDA and NCCL). One communicator per
// group, bootstrapped over MPI for several processes (a process alone needs no MPI), and one
// communication stream of its own. Each operation
//   1. records an event on the caller's current stream and makes the communication stream
//      wait for it (the tensor's producers are done; the host does not wait),
//   2. runs the NCCL call on the communication stream,
//   3. records a done event there, which Work::wait() makes the caller's current stream wait
//      for. completed() queries that event (and the communicator's asynchronous error);
//      synchronize() blocks the host, polling both, for at most the group's timeout().
// The communication stream has the device's highest priority. A watchdog thread per group
// (comm/watchdog.h) watches every operation: one that fails, or is not done within the
// timeout while the host is blocked anywhere (a copy behind a hung collective), ends the job
// naming it and the ranks that had not queued it (an arrival board over a parallel MPI
// communicator, with MPI), then abort_job: every communicator aborted, then MPI_Abort.
// f16 and bf16 reduce natively; avg is NCCL's own (ncclAvg).
#include <cuda_runtime_api.h>
#include <nccl.h>
#if SONATA_WITH_MPI
#include <mpi.h>
#endif

#include <memory>

#include "comm/process_group.h"
#include "comm/watchdog.h"
#include "engine/cuda/stream.h"

namespace sonata {

class ArrivalBoard;

class NcclGroup final : public ProcessGroup {
 public:
  // This process alone on CUDA device `device`, without MPI (ncclCommInitRank over a world of
  // one): the reducer's NCCL path on one GPU, as `torchrun --nproc_per_node 1` gives PyTorch's
  // DDP, and the one NCCL a machine without MPI can run (the lent GPU machine's check).
  explicit NcclGroup(int device);
  // The part of `parent` with this `color` (ncclCommSplit, a collective over `parent`).
  NcclGroup(const NcclGroup& parent, int color, int key);
  ~NcclGroup() override;
  NcclGroup(const NcclGroup&) = delete;
  NcclGroup& operator=(const NcclGroup&) = delete;

  int rank() const override { return rank_; }
  int world_size() const override { return world_size_; }
  int local_rank() const override { return local_rank_; }
  std::string backend() const override { return "nccl"; }
  Device device() const override { return Device::cuda(device_); }
  bool stream_ordered() const override { return true; }
  void on_communication_stream(const std::function<void()>& body) override;
  ncclComm_t comm() const { return comm_; }
  cudaStream_t stream() const { return stream_->get(); }

  std::shared_ptr<Work> all_reduce(Tensor& tensor, ReduceOp op) override;
  std::shared_ptr<Work> broadcast(Tensor& tensor, int root) override;
  std::shared_ptr<Work> all_gather(const Tensor& in, Tensor& out) override;
  std::shared_ptr<Work> reduce_scatter(const Tensor& in, Tensor& out, ReduceOp op) override;
  std::shared_ptr<Work> all_to_all(const Tensor& in, Tensor& out) override;
  std::shared_ptr<Work> barrier() override;
  std::shared_ptr<Work> send(const Tensor& tensor, int peer, int tag) override;
  std::shared_ptr<Work> recv(Tensor& tensor, int peer, int tag) override;
  std::shared_ptr<ProcessGroup> split(int color, int key) override;

#if SONATA_WITH_MPI
  // Collective over `world` (MPI initialised): picks the device from the local rank and
  // sets it, then rank 0's ncclGetUniqueId reaches every rank by MPI_Bcast and each calls
  // ncclCommInitRank.
  NcclGroup(MPI_Comm world, int local_rank);
#endif

 private:
  // Registers comm_ for the fatal handler; makes the stream and the barrier word.
  void adopt_communicator();
  // Orders the communication stream after the work queued so far on the caller's stream.
  void follow_caller();
  // Records the done event after the NCCL call `what` and hands it to the watchdog;
  // `tensors` live until the Work is waited.
  std::shared_ptr<Work> done(const char* what, std::vector<Tensor> tensors, int peer = -1);

  int rank_ = 0;
  int world_size_ = 1;
  int local_rank_ = 0;
  int device_ = 0;
  ncclComm_t comm_ = nullptr;
  std::unique_ptr<Stream> stream_;
  std::unique_ptr<Watchdog> watchdog_;
#if SONATA_WITH_MPI
  // The same ranks over MPI, for naming those that did not arrive (comm/arrival_board.h);
  // none for a group made without MPI.
  MPI_Comm mpi_comm_ = MPI_COMM_NULL;
  bool mpi_any_thread_ = false;
#endif
  std::shared_ptr<ArrivalBoard> board_;
  Tensor barrier_word_;  // what a barrier all-reduces
};

// Aborts every live NCCL communicator of this process (the fatal handler, before MPI_Abort),
// so that kernels waiting on a dead peer return.
void abort_nccl_communicators();

}  // namespace sonata

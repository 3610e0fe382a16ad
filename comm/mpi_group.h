#pragma once
// The MPI process group for CPU tensors: every operation is one non-blocking MPI call
// (MPI_Iallreduce, MPI_Ibcast, ...) on the group's own duplicate of the world communicator,
// with errors returned (not fatal inside MPI) so that they are reported with their place.
// Waits poll with MPI_Test up to the group's timeout(); past it the job ends naming the
// operation and the ranks that did not arrive (comm/arrival_board.h).
//
// Threads: when MPI provides MPI_THREAD_MULTIPLE, any thread may start operations and wait
// on them (one thread per Work). Under MPI_THREAD_FUNNELED only the thread that initialised
// MPI may touch the group or its Works; other threads get an error. MPI progresses
// non-blocking collectives inside MPI calls, so a long computation that wants its
// all-reduce to advance meanwhile calls Work::completed() now and then.
#include <mpi.h>

#include <memory>

#include "comm/process_group.h"

namespace sonata {

class ArrivalBoard;
struct MpiWorkLabel;

class MpiGroup final : public ProcessGroup {
 public:
  // Duplicates `parent` (MPI must be initialised); local_rank comes from the bootstrap.
  MpiGroup(MPI_Comm parent, int local_rank);
  ~MpiGroup() override;
  MpiGroup(const MpiGroup&) = delete;
  MpiGroup& operator=(const MpiGroup&) = delete;

  int rank() const override { return rank_; }
  int world_size() const override { return world_size_; }
  int local_rank() const override { return local_rank_; }
  std::string backend() const override { return "mpi"; }
  Device device() const override { return Device::cpu(); }
  MPI_Comm comm() const { return comm_; }

  std::shared_ptr<Work> all_reduce(Tensor& tensor, ReduceOp op) override;
  std::shared_ptr<Work> broadcast(Tensor& tensor, int root) override;
  std::shared_ptr<Work> all_gather(const Tensor& in, Tensor& out) override;
  std::shared_ptr<Work> reduce_scatter(const Tensor& in, Tensor& out, ReduceOp op) override;
  std::shared_ptr<Work> all_to_all(const Tensor& in, Tensor& out) override;
  std::shared_ptr<Work> barrier() override;
  std::shared_ptr<Work> send(const Tensor& tensor, int peer, int tag) override;
  std::shared_ptr<Work> recv(Tensor& tensor, int peer, int tag) override;
  std::shared_ptr<ProcessGroup> split(int color, int key) override;

 private:
  void check_thread(const char* what) const;
  // The timeout message's facts for an operation about to start; a collective (no `peer`)
  // also counts as this rank's arrival on the board.
  MpiWorkLabel label(const char* what, const Tensor* tensor = nullptr, int peer = -1) const;

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int world_size_ = 1;
  int local_rank_ = 0;
  bool any_thread_ = false;              // MPI_THREAD_MULTIPLE
  std::shared_ptr<ArrivalBoard> board_;  // who has reached which collective
};

}  // namespace sonata

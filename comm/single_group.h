#pragma once
// The group of one process: sums and averages over one rank are the tensor itself, so every
// operation completes at once. Used whenever the job was not started by a launcher; MPI is
// never initialised.
#include "comm/process_group.h"

namespace sonata {

class SingleGroup final : public ProcessGroup {
 public:
  explicit SingleGroup(Device device = Device::cpu()) : device_(device) {}
  int rank() const override { return 0; }
  int world_size() const override { return 1; }
  int local_rank() const override { return 0; }
  std::string backend() const override { return "single"; }
  Device device() const override { return device_; }

  std::shared_ptr<Work> all_reduce(Tensor& tensor, ReduceOp op) override;
  std::shared_ptr<Work> broadcast(Tensor& tensor, int root) override;
  std::shared_ptr<Work> all_gather(const Tensor& in, Tensor& out) override;
  std::shared_ptr<Work> reduce_scatter(const Tensor& in, Tensor& out, ReduceOp op) override;
  std::shared_ptr<Work> all_to_all(const Tensor& in, Tensor& out) override;
  std::shared_ptr<Work> barrier() override;
  // A single process has no peer: both throw.
  std::shared_ptr<Work> send(const Tensor& tensor, int peer, int tag) override;
  std::shared_ptr<Work> recv(Tensor& tensor, int peer, int tag) override;
  std::shared_ptr<ProcessGroup> split(int color, int key) override;

 private:
  Device device_;
};

}  // namespace sonata

#pragma once
// A process group that forwards to another and logs what its callers did: every operation
// started ("all_reduce", "all_gather", ..., "split") and every host wait on one
// ("synchronize"). stream_ordered() can be set, so code that takes the NCCL path (issue a
// chain without host waits) can be checked on the CPU; the inner group must then complete
// each operation at once (the single group does).
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "comm/process_group.h"

namespace sonata::testing {

class RecordingGroup final : public ProcessGroup {
 public:
  explicit RecordingGroup(std::shared_ptr<ProcessGroup> inner, bool stream_ordered = false);
  // Logs into `log` too, each entry prefixed with `prefix`: two groups sharing one log show
  // how their operations interleave.
  RecordingGroup(std::shared_ptr<ProcessGroup> inner, std::shared_ptr<std::vector<std::string>> log,
                 std::string prefix, bool stream_ordered = false);

  int rank() const override { return inner_->rank(); }
  int world_size() const override { return inner_->world_size(); }
  int local_rank() const override { return inner_->local_rank(); }
  std::string backend() const override { return inner_->backend(); }
  Device device() const override { return inner_->device(); }
  bool stream_ordered() const override { return stream_ordered_; }
  void on_communication_stream(const std::function<void()>& body) override;

  std::shared_ptr<Work> all_reduce(Tensor& tensor, ReduceOp op) override;
  std::shared_ptr<Work> broadcast(Tensor& tensor, int root) override;
  std::shared_ptr<Work> all_gather(const Tensor& in, Tensor& out) override;
  std::shared_ptr<Work> reduce_scatter(const Tensor& in, Tensor& out, ReduceOp op) override;
  std::shared_ptr<Work> all_to_all(const Tensor& in, Tensor& out) override;
  std::shared_ptr<Work> barrier() override;
  std::shared_ptr<Work> send(const Tensor& tensor, int peer, int tag) override;
  std::shared_ptr<Work> recv(Tensor& tensor, int peer, int tag) override;
  std::shared_ptr<ProcessGroup> split(int color, int key) override;

  // What happened, in order; a split group logs into its parent's log too, prefixed "split:".
  std::vector<std::string>& log() { return *log_; }
  int64_t count(const std::string& entry) const;
  // Work::wait() calls made outside on_communication_stream: on NCCL each makes the caller's
  // stream wait for the operation (a split group counts into its parent's).
  int64_t caller_stream_waits() const { return state_->caller_waits; }

 private:
  struct State {
    int depth = 0;  // nesting of on_communication_stream
    int64_t caller_waits = 0;
  };
  RecordingGroup(std::shared_ptr<ProcessGroup> inner, bool stream_ordered,
                 std::shared_ptr<std::vector<std::string>> log, std::string prefix,
                 std::shared_ptr<State> state);
  std::shared_ptr<Work> record(const char* what, std::shared_ptr<Work> work);

  std::shared_ptr<ProcessGroup> inner_;
  bool stream_ordered_;
  std::shared_ptr<std::vector<std::string>> log_;
  std::string prefix_;
  std::shared_ptr<State> state_;
};

}  // namespace sonata::testing

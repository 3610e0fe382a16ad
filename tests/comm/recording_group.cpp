#include "tests/comm/recording_group.h"

#include <algorithm>
#include <utility>

namespace sonata::testing {
namespace {

class RecordingWork final : public Work {
 public:
  RecordingWork(std::shared_ptr<Work> inner, std::shared_ptr<std::vector<std::string>> log,
                std::string prefix, std::function<void()> on_wait)
      : inner_(std::move(inner)),
        log_(std::move(log)),
        prefix_(std::move(prefix)),
        on_wait_(std::move(on_wait)) {}
  void wait() override {
    on_wait_();
    inner_->wait();
  }
  void synchronize() override {
    log_->push_back(prefix_ + "synchronize");
    inner_->synchronize();
  }
  bool completed() override { return inner_->completed(); }

 private:
  std::shared_ptr<Work> inner_;
  std::shared_ptr<std::vector<std::string>> log_;
  std::string prefix_;
  std::function<void()> on_wait_;
};

}  // namespace

RecordingGroup::RecordingGroup(std::shared_ptr<ProcessGroup> inner, bool stream_ordered)
    : RecordingGroup(std::move(inner), stream_ordered, std::make_shared<std::vector<std::string>>(),
                     "", std::make_shared<State>()) {}

RecordingGroup::RecordingGroup(std::shared_ptr<ProcessGroup> inner,
                               std::shared_ptr<std::vector<std::string>> log, std::string prefix,
                               bool stream_ordered)
    : RecordingGroup(std::move(inner), stream_ordered, std::move(log), std::move(prefix),
                     std::make_shared<State>()) {}

RecordingGroup::RecordingGroup(std::shared_ptr<ProcessGroup> inner, bool stream_ordered,
                               std::shared_ptr<std::vector<std::string>> log, std::string prefix,
                               std::shared_ptr<State> state)
    : inner_(std::move(inner)),
      stream_ordered_(stream_ordered),
      log_(std::move(log)),
      prefix_(std::move(prefix)),
      state_(std::move(state)) {}

void RecordingGroup::on_communication_stream(const std::function<void()>& body) {
  ++state_->depth;
  try {
    inner_->on_communication_stream(body);
  } catch (...) {
    --state_->depth;
    throw;
  }
  --state_->depth;
}

int64_t RecordingGroup::count(const std::string& entry) const {
  return std::count(log_->begin(), log_->end(), entry);
}

std::shared_ptr<Work> RecordingGroup::record(const char* what, std::shared_ptr<Work> work) {
  log_->push_back(prefix_ + what);
  return std::make_shared<RecordingWork>(std::move(work), log_, prefix_, [state = state_] {
    if (state->depth == 0) ++state->caller_waits;
  });
}

std::shared_ptr<Work> RecordingGroup::all_reduce(Tensor& tensor, ReduceOp op) {
  return record("all_reduce", inner_->all_reduce(tensor, op));
}
std::shared_ptr<Work> RecordingGroup::broadcast(Tensor& tensor, int root) {
  return record("broadcast", inner_->broadcast(tensor, root));
}
std::shared_ptr<Work> RecordingGroup::all_gather(const Tensor& in, Tensor& out) {
  return record("all_gather", inner_->all_gather(in, out));
}
std::shared_ptr<Work> RecordingGroup::reduce_scatter(const Tensor& in, Tensor& out, ReduceOp op) {
  return record("reduce_scatter", inner_->reduce_scatter(in, out, op));
}
std::shared_ptr<Work> RecordingGroup::all_to_all(const Tensor& in, Tensor& out) {
  return record("all_to_all", inner_->all_to_all(in, out));
}
std::shared_ptr<Work> RecordingGroup::barrier() {
  return record("barrier", inner_->barrier());
}
std::shared_ptr<Work> RecordingGroup::send(const Tensor& tensor, int peer, int tag) {
  return record("send", inner_->send(tensor, peer, tag));
}
std::shared_ptr<Work> RecordingGroup::recv(Tensor& tensor, int peer, int tag) {
  return record("recv", inner_->recv(tensor, peer, tag));
}
std::shared_ptr<ProcessGroup> RecordingGroup::split(int color, int key) {
  log_->push_back(prefix_ + "split");
  return std::shared_ptr<ProcessGroup>(
      new RecordingGroup(inner_->split(color, key), stream_ordered_, log_, "split:", state_));
}

}  // namespace sonata::testing

#include "comm/sync_batch_norm.h"

#include <utility>

#include "base/error.h"
#include "base/nvtx.h"

namespace sonata {
namespace {

class GroupStatsReducer final : public BatchNormStatsReducer {
 public:
  explicit GroupStatsReducer(std::shared_ptr<ProcessGroup> group) : group_(std::move(group)) {}

  Tensor gather(const Tensor& values) override {
    SONATA_NVTX_RANGE("sonata::sync_batch_norm::gather");
    const Tensor in = values.contiguous();
    Shape shape = in.shape();
    shape.insert(shape.begin(), group_->world_size());
    Tensor out = empty(shape, in.options());
    group_->all_gather(in, out)->wait();
    return out;
  }

 private:
  std::shared_ptr<ProcessGroup> group_;
};

}  // namespace

std::shared_ptr<BatchNormStatsReducer> make_batch_norm_stats_reducer(
    std::shared_ptr<ProcessGroup> group) {
  SONATA_CHECK(group != nullptr, "make_batch_norm_stats_reducer: the process group is null");
  return std::make_shared<GroupStatsReducer>(std::move(group));
}

}  // namespace sonata

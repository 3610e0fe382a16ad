#include "comm/ddp.h"

#include <utility>

#include "base/error.h"
#include "comm/broadcast_coalesced.h"
#include "comm/bucket_layout.h"
#include "engine/autograd/grad_mode.h"

namespace sonata {
namespace {

// Rank 0's parameters and buffers everywhere, before the reducer checks the parameters.
std::shared_ptr<Module> broadcast_state(std::shared_ptr<Module> module, ProcessGroup& group) {
  SONATA_CHECK(module != nullptr, "DistributedDataParallel: the module is null");
  std::vector<Tensor> state;
  Fnv1a signature;
  for (auto& [name, t] : module->state_dict()) {
    state.push_back(t);
    signature.add(uint64_t(t.dtype()));
    signature.add(t.shape().size());
    for (int64_t size : t.shape()) signature.add(uint64_t(size));
  }
  // Broadcasting into replicas of another shape would fail inside MPI or NCCL; say so first.
  Tensor mine = from_vector(std::vector<int64_t>{int64_t(signature.value())}, {1}, group.device());
  Tensor all = zeros({group.world_size()}, TensorOptions{}.with(DType::i64).with(group.device()));
  group.all_gather(mine, all)->synchronize();  // the host reads it: a polled wait
  const std::vector<int64_t> signatures = all.to_vector<int64_t>();
  for (size_t r = 1; r < signatures.size(); ++r)
    SONATA_CHECK(signatures[r] == signatures[0],
                 "DistributedDataParallel: the parameters and "
                 "buffers of rank ",
                 r, " differ from rank 0's in number, shapes or dtypes");
  broadcast_coalesced(group, state, 0);
  return module;
}

}  // namespace

DistributedDataParallel::DistributedDataParallel(std::shared_ptr<Module> module,
                                                 std::shared_ptr<ProcessGroup> group,
                                                 const DdpOptions& options)
    : module_(broadcast_state(std::move(module), *group)),
      group_(group),
      options_(options),
      reducer_(module_->named_parameters(), group, options.reducer) {}

void DistributedDataParallel::broadcast_buffers() {
  if (!options_.broadcast_buffers || group_->world_size() == 1) return;
  std::vector<Tensor> buffers;
  for (auto& [name, t] : module_->named_buffers()) buffers.push_back(t);
  if (!buffers.empty()) broadcast_coalesced(*group_, buffers, 0);
}

Tensor DistributedDataParallel::forward(const Tensor& input) {
  if (module_->is_training()) {
    broadcast_buffers();
    if (GradMode::enabled()) reducer_.prepare_for_backward();
  }
  return module_->forward(input);
}

}  // namespace sonata

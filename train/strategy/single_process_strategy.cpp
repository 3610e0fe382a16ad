#include "train/strategy/single_process_strategy.h"

#include "base/nvtx.h"
#include "engine/ops.h"

namespace sonata {

int64_t micro_batch_backward(Task& task, Device device, const LossHooks& hooks,
                             const HostBatch& batch, size_t micro) {
  Tensor loss;
  // Out of memory in the forward or backward pass names the batch's clips (one overlong clip
  // is the usual cause).
  with_batch_named(batch, [&] {
    loss = batch_loss(task, batch, device);
    SONATA_NVTX_RANGE("sonata::step::backward");
    hooks.scale(loss * (1.0 / double(micro))).backward();
  });
  hooks.track(loss.detach());
  return batch.items;
}

SingleProcessStrategy::SingleProcessStrategy(Task& task, Device device, LossHooks hooks,
                                             std::shared_ptr<ProcessGroup> world)
    : TrainingStrategy(std::move(world)), task_(task), device_(device), hooks_(std::move(hooks)) {}

int64_t SingleProcessStrategy::step(size_t micro, const std::function<HostBatch()>& next_batch) {
  int64_t items = 0;
  for (size_t m = 0; m < micro; ++m)
    items += micro_batch_backward(task_, device_, hooks_, next_batch(), micro);
  return items;
}

}  // namespace sonata

#pragma once
// One process: each micro-batch's loss, scaled by 1/M, backward; nothing to agree on.
#include "train/strategy/training_strategy.h"

namespace sonata {

// One micro-batch of `micro`: the task's loss, its scaled backward, the loss tracked.
// Returns the batch's items. The step of one process, and of each DDP rank.
int64_t micro_batch_backward(Task& task, Device device, const LossHooks& hooks,
                             const HostBatch& batch, size_t micro);

class SingleProcessStrategy : public TrainingStrategy {
 public:
  // `world`: null for training; --eval-only passes the run's group, whose ranks evaluate
  // their shards alone and only sum the figures.
  SingleProcessStrategy(Task& task, Device device, LossHooks hooks,
                        std::shared_ptr<ProcessGroup> world = nullptr);

  StrategyKind kind() const override { return StrategyKind::single_process; }
  int64_t replica() const override { return world_ ? world_->rank() : 0; }
  int64_t replicas() const override { return world_ ? world_->world_size() : 1; }
  std::string describe(int64_t) const override { return {}; }
  std::vector<Tensor> parameters() const override { return task_.model().parameters(); }
  int64_t step(size_t micro, const std::function<HostBatch()>& next_batch) override;

 private:
  Task& task_;
  Device device_;
  LossHooks hooks_;
};

}  // namespace sonata

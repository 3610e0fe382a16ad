#pragma once
// One process: nothing to reduce or agree on, so none of the step's named points does
// anything. --eval-only gives it the run's group, whose ranks evaluate their shards alone.
#include "train/strategy/training_strategy.h"

namespace sonata {

class SingleProcessStrategy : public TrainingStrategy {
 public:
  // `world`: null for training; --eval-only passes the run's group, whose ranks evaluate
  // their shards alone and only sum the figures.
  explicit SingleProcessStrategy(Task& task, std::shared_ptr<ProcessGroup> world = nullptr);

  StrategyKind kind() const override { return StrategyKind::single_process; }
  int64_t replica() const override { return world_ ? world_->rank() : 0; }
  int64_t replicas() const override { return world_ ? world_->world_size() : 1; }
  std::string describe(int64_t) const override { return {}; }
  std::vector<Tensor> parameters() const override { return task_.model().parameters(); }

 private:
  Task& task_;
};

}  // namespace sonata

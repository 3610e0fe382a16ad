#pragma once
// Data parallel (DDP): every rank its shard of each batch, gradients averaged in buckets
// while the last micro-batch's backward runs (no_sync before it), rank 0's buffers
// broadcast before each forward (unless --sync-bn computes the statistics over the ranks).
// As PyTorch's DDP, hooks on the step's named points: the loop runs the backward.
#include <optional>

#include "comm/ddp.h"
#include "train/strategy/training_strategy.h"

namespace sonata {

class DataParallelStrategy : public TrainingStrategy {
 public:
  // `world`: more than one process.
  DataParallelStrategy(const TrainerOptions& options, Task& task,
                       std::shared_ptr<ProcessGroup> world);

  StrategyKind kind() const override { return StrategyKind::data_parallel; }
  int64_t replica() const override { return world_->rank(); }
  int64_t replicas() const override { return world_->world_size(); }
  // Wraps the model in DDP, which broadcasts rank 0's weights to every rank.
  void start() override;
  std::string describe(int64_t batch_size) const override;
  std::vector<Tensor> parameters() const override { return task_.model().parameters(); }
  // Rank 0's buffers, the reducer armed; every micro-batch but the last under no_sync.
  void before_micro_batch(size_t m, size_t micro) override;
  void after_micro_batch() override { no_sync_.reset(); }
  // The last micro-batch's buckets all-reduced.
  void reduce_gradients() override;
  // Rank 0's BatchNorm statistics for every shard (each rank's last forward updated its own).
  void before_evaluation() override;

 private:
  const TrainerOptions& options_;
  Task& task_;
  std::unique_ptr<DistributedDataParallel> ddp_;
  std::optional<NoSync> no_sync_;  // from before_micro_batch to after_micro_batch
};

}  // namespace sonata

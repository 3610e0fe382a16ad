#pragma once
// Data parallel (DDP): every rank its shard of each batch, gradients averaged in buckets
// while the last micro-batch's backward runs (no_sync before it), rank 0's buffers
// broadcast before each forward (unless --sync-bn computes the statistics over the ranks).
#include "comm/ddp.h"
#include "train/strategy/training_strategy.h"

namespace sonata {

class DataParallelStrategy : public TrainingStrategy {
 public:
  // `world`: more than one process.
  DataParallelStrategy(const TrainerOptions& options, Task& task,
                       std::shared_ptr<ProcessGroup> world, Device device, LossHooks hooks);

  StrategyKind kind() const override { return StrategyKind::data_parallel; }
  int64_t replica() const override { return world_->rank(); }
  int64_t replicas() const override { return world_->world_size(); }
  // Wraps the model in DDP, which broadcasts rank 0's weights to every rank.
  void start() override;
  std::string describe(int64_t batch_size) const override;
  std::vector<Tensor> parameters() const override { return task_.model().parameters(); }
  int64_t step(size_t micro, const std::function<HostBatch()>& next_batch) override;
  // Rank 0's BatchNorm statistics for every shard (each rank's last forward updated its own).
  void before_evaluation() override;

 private:
  const TrainerOptions& options_;
  Task& task_;
  Device device_;
  LossHooks hooks_;
  std::unique_ptr<DistributedDataParallel> ddp_;
};

}  // namespace sonata

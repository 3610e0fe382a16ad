#pragma once
// --pipeline-stages S: the model cut into S stages on S ranks (pipeline), and with a world
// of D x S ranks, D data-parallel replicas of that pipeline (hybrid). Every call into
// PipelineParallel (train/pipeline/pipeline_parallel.h) is made from this class's .cpp; its
// ownership map (which stage holds which tensor) is the strategy's.
#include <memory>

#include "train/strategy/training_strategy.h"

namespace sonata {

class PipelineParallel;

class PipelineStrategy : public TrainingStrategy {
 public:
  // `kind`: pipeline or hybrid, as choose_strategy() names the world. A collective over
  // `world`.
  PipelineStrategy(StrategyKind kind, const TrainerOptions& options, Task& task,
                   std::shared_ptr<ProcessGroup> world, Device device, LossHooks hooks);
  ~PipelineStrategy() override;

  StrategyKind kind() const override { return kind_; }
  int64_t replica() const override;
  int64_t replicas() const override;
  const char* shard_name() const override { return "replicas"; }
  // Replica 0's stages replace every rank's copy of the model.
  void start() override;
  std::string describe(int64_t batch_size) const override;
  // This stage's parameters.
  std::vector<Tensor> parameters() const override;
  // The micro-batches through the pipeline; the last stage counts the replica's items.
  int64_t step(size_t micro, const std::function<HostBatch()>& next_batch) override;
  // Each stage holds part of the gradients: the skip decision and the norm are global.
  Tensor agree_and_clip(LossScaler& scaler, const std::vector<Tensor>& params,
                        double max_norm) override;
  EvalCounts evaluate(Task& task, const std::string& split, Device device, int64_t rank,
                      int64_t world) override;

 private:
  StrategyKind kind_;
  Device device_;
  std::unique_ptr<PipelineParallel> pipeline_;
};

}  // namespace sonata

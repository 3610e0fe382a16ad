#include "train/strategy/pipeline_strategy.h"

#include "base/error.h"
#include "train/pipeline/pipeline_parallel.h"

namespace sonata {

PipelineStrategy::PipelineStrategy(StrategyKind kind, const TrainerOptions& options, Task& task,
                                   std::shared_ptr<ProcessGroup> world, Device device,
                                   LossHooks hooks)
    : TrainingStrategy(world), kind_(kind), device_(device) {
  SONATA_CHECK(kind == StrategyKind::pipeline || kind == StrategyKind::hybrid,
               "PipelineStrategy: a pipeline or hybrid strategy, not ", strategy_name(kind));
  // The last stage's loss of one micro-batch, tracked and scaled.
  PipelineLoss loss = [&task, device, hooks = std::move(hooks)](
                          const LayerValue& output, const std::vector<Tensor>& targets) {
    const Tensor value = task.loss(output, targets, device);
    hooks.track(value.detach());
    return hooks.scale(value);
  };
  pipeline_ =
      std::make_unique<PipelineParallel>(options, task, std::move(world), device, std::move(loss));
  set_ownership(pipeline_->shared_ownership());
}

PipelineStrategy::~PipelineStrategy() = default;

int64_t PipelineStrategy::replica() const {
  return pipeline_->replica();
}

int64_t PipelineStrategy::replicas() const {
  return pipeline_->replicas();
}

// After the weights are final: replica 0's stages on every replica.
void PipelineStrategy::start() {
  pipeline_->start_training();
}

std::string PipelineStrategy::describe(int64_t) const {
  return str("pipeline parallel: ", pipeline_->describe(), "; this process runs stage ",
             pipeline_->stage(), " of replica ", pipeline_->replica());
}

std::vector<Tensor> PipelineStrategy::parameters() const {
  return pipeline_->parameters();
}

int64_t PipelineStrategy::step(size_t micro, const std::function<HostBatch()>& next_batch) {
  std::vector<HostBatch> batches;
  for (size_t m = 0; m < micro; ++m) batches.push_back(next_batch());
  pipeline_->step(batches, device_);
  // The items once per replica: its last stage counts them (and tracks the losses).
  int64_t items = 0;
  if (pipeline_->is_last_stage())
    for (const HostBatch& batch : batches) items += batch.items;
  return items;
}

Tensor PipelineStrategy::agree_and_clip(LossScaler& scaler, const std::vector<Tensor>& params,
                                        double max_norm) {
  pipeline_->agree_found_inf(scaler);
  return pipeline_->clip_global_norm(params, max_norm);
}

// Through the stages: the last stage of each replica counts its shard, the others give zeros.
EvalCounts PipelineStrategy::evaluate(Task&, const std::string& split, Device device, int64_t,
                                      int64_t) {
  return pipeline_->evaluate(split, device);
}

}  // namespace sonata

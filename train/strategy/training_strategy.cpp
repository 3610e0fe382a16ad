#include "train/strategy/training_strategy.h"

#include "base/error.h"
#include "engine/ops.h"
#include "engine/optim/clip_grad.h"

namespace sonata {

const char* strategy_name(StrategyKind kind) {
  switch (kind) {
    case StrategyKind::single_process:
      return "single process";
    case StrategyKind::data_parallel:
      return "data parallel";
    case StrategyKind::pipeline:
      return "pipeline";
    case StrategyKind::hybrid:
      return "hybrid";
  }
  return "?";
}

StrategyKind choose_strategy(const TrainerOptions& options, int world_size) {
  SONATA_CHECK(world_size >= 1, "the world has ", world_size, " processes");
  const int64_t stages = options.pipeline_stages;
  if (stages > 1) {
    SONATA_CHECK(
        world_size % stages == 0, "--pipeline-stages ", stages, " needs a multiple of ", stages,
        " processes (one per stage, times the data-parallel replicas); this run has ", world_size);
    return world_size == stages ? StrategyKind::pipeline : StrategyKind::hybrid;
  }
  return world_size > 1 ? StrategyKind::data_parallel : StrategyKind::single_process;
}

TrainingStrategy::TrainingStrategy(std::shared_ptr<ProcessGroup> world,
                                   std::shared_ptr<StateOwnership> ownership)
    : world_(std::move(world)),
      ownership_(ownership ? std::move(ownership) : std::make_shared<IdentityOwnership>()) {}

Tensor TrainingStrategy::agree_and_clip(LossScaler&, const std::vector<Tensor>& params,
                                        double max_norm) {
  // Every rank holds the same (reduced) gradients: its own overflow flag and norm agree.
  return max_norm > 0 ? clip_grad_norm_(params, max_norm) : grad_norm(params);
}

EvalCounts TrainingStrategy::evaluate(Task& task, const std::string& split, Device device,
                                      int64_t rank, int64_t world) {
  before_evaluation();
  return sonata::evaluate(task, split, device, rank, world);
}

std::vector<double> TrainingStrategy::sum_over_ranks(std::vector<double> values) const {
  if (!world_ || values.empty()) return values;
  Tensor sums = from_vector(values, {int64_t(values.size())}, TensorOptions{}.with(DType::f64))
                    .to(world_->device());
  world_->all_reduce(sums, ReduceOp::sum)->synchronize();
  return sums.to(Device::cpu()).to_vector<double>();
}

}  // namespace sonata

#include "train/setup/strategy_choice.h"

#include "base/error.h"
#include "train/pipeline/pipeline_parallel.h"
#include "train/strategy/data_parallel_strategy.h"
#include "train/strategy/single_process_strategy.h"

namespace sonata {

std::unique_ptr<TrainingStrategy> make_training_strategy(const TrainerOptions& options, Task& task,
                                                         std::shared_ptr<ProcessGroup> group,
                                                         Device device) {
  if (group && group->world_size() == 1) group = nullptr;
  switch (choose_strategy(options, group ? group->world_size() : 1)) {
    case StrategyKind::single_process:
      return std::make_unique<SingleProcessStrategy>(task);
    case StrategyKind::data_parallel:
      return std::make_unique<DataParallelStrategy>(options, task, std::move(group));
    case StrategyKind::pipeline:
    case StrategyKind::hybrid:
      return std::make_unique<PipelineParallel>(options, task, std::move(group), device);
  }
  throw Error("make_training_strategy: unknown strategy");
}

}  // namespace sonata

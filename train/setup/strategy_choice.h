#pragma once
// The training strategy a run's options and world call for, built (train/strategy/ for one
// process and data parallel, train/pipeline/ for a pipeline or hybrid): the one place that
// knows every strategy, so that neither room includes the other.
#include <memory>

#include "train/strategy/training_strategy.h"

namespace sonata {

// The strategy of choose_strategy(options, world size), built. `group`: null or of size 1
// in one process. `task.model()` is on `device`. A collective over `group` for a pipeline.
std::unique_ptr<TrainingStrategy> make_training_strategy(const TrainerOptions& options, Task& task,
                                                         std::shared_ptr<ProcessGroup> group,
                                                         Device device);

}  // namespace sonata

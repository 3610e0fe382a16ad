#include "train/strategy/single_process_strategy.h"

namespace sonata {

SingleProcessStrategy::SingleProcessStrategy(Task& task, std::shared_ptr<ProcessGroup> world)
    : TrainingStrategy(std::move(world)), task_(task) {}

}  // namespace sonata

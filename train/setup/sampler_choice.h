#pragma once
// The training sampler a task asks for (Task::sampling()), sharded `replica` of `replicas`:
// length buckets (x100 the batch, --sortagrad's first epoch shortest first), class-balanced,
// or a uniform permutation; all pure functions of the epoch and --seed.
#include <memory>

#include "data/sampling/batch_sampler.h"
#include "train/task.h"
#include "train/trainer_options.h"

namespace sonata {

std::unique_ptr<BatchSampler> make_sampler(const TrainerOptions& options, const Task& task,
                                           int64_t replica, int64_t replicas);

}  // namespace sonata

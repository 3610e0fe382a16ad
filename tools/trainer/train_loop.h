#pragma once
// The training loop: batches prepared one step ahead on a worker thread, forward + loss,
// backward (scaled under fp16), gradient accumulation, unscale + inf check, clipping by the
// global norm, the optimizer step and the LR schedule; evaluation, checkpoints and metrics
// at epoch ends; --resume continues bit for bit on the CPU.
#include <string>

#include "engine/device.h"
#include "tools/trainer/task.h"
#include "tools/trainer/trainer_options.h"

namespace sonata {

struct TrainResult {
  int64_t steps = 0;         // optimizer steps taken in total (resumed ones included)
  bool stopped_bad = false;  // stopped because the loss stayed non-finite
  EvalResult last_val, test;
  std::string last_checkpoint;
};

TrainResult run_training(const TrainerOptions& options, Task& task, Device device);

}  // namespace sonata

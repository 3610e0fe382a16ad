#pragma once
// The training loop: batches prepared one step ahead on a worker thread, forward + loss,
// backward (scaled under fp16), gradient accumulation, unscale + inf check, clipping by the
// global norm, the optimizer step and the LR schedule; evaluation, checkpoints and metrics
// at epoch ends; --resume continues bit for bit on the CPU.
#include <string>

#include <memory>

#include "comm/process_group.h"
#include "engine/device.h"
#include "train/task.h"
#include "train/trainer_options.h"

namespace sonata {

struct TrainResult {
  int64_t steps = 0;         // optimizer steps taken in total (resumed ones included)
  bool stopped_bad = false;  // stopped because the loss stayed non-finite
  // Stopped after a step by SIGTERM, SIGUSR1 or SIGINT (train/stop_signals.h), checkpointed
  // there on every rank: the signal's number (on ranks that did not receive one, -1), or 0.
  int stopped_by_signal = 0;
  EvalResult last_val, test;
  std::string last_checkpoint;
};

// `group` (comm/): with more than one process, data parallel (DDP) training: each rank
// reads its shard of every batch, gradients are averaged in buckets while backward runs,
// only rank 0 prints, logs and writes checkpoints, and logged and evaluated figures are
// totals over the ranks. Null or world size 1: one process.
TrainResult run_training(const TrainerOptions& options, Task& task, Device device,
                         std::shared_ptr<ProcessGroup> group = nullptr);

}  // namespace sonata

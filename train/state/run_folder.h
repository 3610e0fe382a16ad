#pragma once
// Claiming a --checkpoint-dir for a run: its lock (checkpoint_dir_lock.h) taken first, then a
// folder that already holds a run's checkpoints is written only by a run that continues it
// (--resume auto, or --resume one of its step folders). Any other run there is refused before
// it touches anything, in one sentence giving --resume and a new folder; with --overwrite the
// old run is moved aside into `<dir>/previous-run-<N>/` (never deleted). A run that starts
// afresh gives the folder a new run id (engine/checkpoint/run_identity.h), which its
// checkpoints then carry.
#include <memory>

#include "train/state/checkpoint_dir_lock.h"
#include "train/trainer_options.h"

namespace sonata {

// The lock of `options.checkpoint_dir`, which must be set, once the folder is this run's.
std::unique_ptr<CheckpointDirLock> claim_checkpoint_dir(const TrainerOptions& options);

}  // namespace sonata

#pragma once
// What a trainer checkpoint holds besides the weights, and how a run continues from it:
// the optimizer's state, the loss scaler, the position (optimizer step, epoch, next batch of
// that epoch: the sampler is a pure function of the epoch, so this is its whole state), the
// default generator's offset, the full option set as JSON, and the vocabulary or label map.
// A checkpoint of another model or vocabulary is refused with the differences named.
#include <cstdint>
#include <string>

#include "engine/amp/loss_scaler.h"
#include "engine/checkpoint/checkpoint.h"
#include "engine/optim/optimizer.h"
#include "train/strategy/state_ownership.h"
#include "train/task.h"
#include "train/trainer_options.h"

namespace sonata {

struct TrainPosition {
  int64_t step = 0;   // optimizer steps done
  int64_t epoch = 0;  // the epoch the next batch belongs to
  int64_t batch = 0;  // the next batch's index within that epoch
};

TrainingState capture_training_state(const TrainerOptions& options, Task& task,
                                     const Optimizer& optimizer, const LossScaler& scaler,
                                     const TrainPosition& position);

// Loads `loaded` (load_resume_checkpoint: what this rank holds of a checkpoint) into the
// model, optimizer and scaler, after checking that the checkpoint's whole model
// (loaded.model_in_file) fits this one, and returns where to continue. Only the model entries
// loaded holds are loaded; the rest of the model (another pipeline stage's) is left as it is.
// `notes` receives a line per option that differs from the run that wrote the checkpoint,
// applied from its step on (the optimizer's hyper-parameters are `optimizer`'s own, from this
// command line, not the checkpoint's); a change that cannot be honoured throws before
// anything is loaded (resume_changes.h).
TrainPosition restore_training_state(const PartialTrainingState& loaded,
                                     const TrainerOptions& options, Task& task,
                                     Optimizer& optimizer, LossScaler& scaler,
                                     std::vector<std::string>* notes);

// The checkpoint --resume names: "auto" is --checkpoint-dir, whose newest step folder that
// loads is loaded, or "" when it holds no step folder yet, so that a preemptible job can
// always pass --resume auto. A folder holding only damaged checkpoints is not "none yet".
std::string resume_path(const TrainerOptions& options);

// load_checkpoint (engine/checkpoint/checkpoint.h) of resume_path(options). Under --resume
// auto, a folder none of whose checkpoints loads is refused, naming each and why: a fresh
// run would train over them.
TrainingState load_resume_checkpoint(const std::string& path, const TrainerOptions& options,
                                     CheckpointSource* source);
// The same as this rank holds it (StateOwnership::read_checkpoint): the whole state, or a
// pipeline stage's tensors alone under its optimizer's numbering.
PartialTrainingState load_resume_checkpoint(const std::string& path, const TrainerOptions& options,
                                            const StateOwnership& ownership,
                                            CheckpointSource* source);

}  // namespace sonata

#pragma once
// Which rank holds which of one process's tensors: the parameters the optimizer steps, their
// optimizer state, and the entries of a checkpoint. The optimizer setup (optimizer_choice.h),
// resume (training_state.h) and checkpoint saving (train_loop_checkpoints.cpp) consult it,
// and never ask which strategy runs: checkpoints are always one process's files, under one
// process's names and optimizer numbering, whoever holds their parts.
//
// One process, and data parallel (every rank a whole copy): the identity, below. A pipeline
// stage holds its own layers' tensors (train/pipeline/stage_ownership.h).
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "engine/checkpoint/checkpoint.h"
#include "engine/optim/optimizer.h"

namespace sonata {

class StateOwnership {
 public:
  virtual ~StateOwnership() = default;

  // The optimizer's parameter groups on this rank, from one process's `whole`: a rank that
  // holds part of the model keeps its parameters only, every group kept (maybe empty) so
  // that the groups number as in one process. Call once, before reading or writing a
  // checkpoint (which number the optimizer's state so).
  virtual std::vector<ParamGroup> optimizer_groups(std::vector<ParamGroup> whole) = 0;

  // Resume: what this rank holds of the checkpoint at `path` (a step folder or a directory,
  // as load_checkpoint takes it), as this rank holds it: its model entries (a piece of a
  // layer cut by rows copied into its place, and left out), and its optimizer state under
  // this rank's optimizer's numbering. model_in_file lists every model tensor of the file,
  // which the compatibility check judges the whole model by.
  virtual PartialTrainingState read_checkpoint(const std::string& path,
                                               CheckpointSource* source) const = 0;

  // Whether `here` holds on any rank that holds part of a checkpoint: a collective over every
  // rank where the parts are spread (each then decides alike whether to write one).
  virtual bool on_any_holder(bool here) const = 0;
  // Writes one process's checkpoint through `writer` (the writing rank's; null elsewhere).
  // `capture` gives this rank's state (its model and optimizer, the run's scalars and
  // texts); it is called only where this rank holds part of what is written. Returns the
  // step folder written, "" on the other ranks.
  virtual std::string write_checkpoint(CheckpointManager* writer,
                                       const std::function<TrainingState()>& capture, int64_t step,
                                       std::optional<double> metric) const = 0;

  // Every rank's model whole again, for whoever uses it after the run (a collective where
  // ranks hold parts).
  virtual void gather_model() = 0;
};

// Every rank holds everything: the optimizer steps every parameter, a checkpoint is read
// whole and written by the writer alone.
class IdentityOwnership final : public StateOwnership {
 public:
  std::vector<ParamGroup> optimizer_groups(std::vector<ParamGroup> whole) override { return whole; }
  PartialTrainingState read_checkpoint(const std::string& path,
                                       CheckpointSource* source) const override;
  bool on_any_holder(bool here) const override { return here; }
  std::string write_checkpoint(CheckpointManager* writer,
                               const std::function<TrainingState()>& capture, int64_t step,
                               std::optional<double> metric) const override;
  void gather_model() override {}
};

}  // namespace sonata

#pragma once
// A pipeline stage's ownership map (train/strategy/state_ownership.h): which stage (world
// rank of replica 0) holds each entry of the whole model's state, whole or, for a layer cut
// into row pieces (comm/pipeline/partition.h), which rows of it; and which of one process's
// optimizer parameters this stage's optimizer steps, under which of its own numbers.
//
// Checkpoints stay the single-process ones, under the whole model's names and parameter
// indices, and no rank assembles one whole. To save, replica 0's stages send world rank 0
// the names, dtypes and shapes of their state first, so that it writes each file's header
// before any data; then checkpoint_source() fetches each tensor as the writer reaches it (its
// own from its stage, the others' received one at a time from serve_checkpoint() on their
// stage), so that rank 0 holds its stage plus the one tensor in flight, and the files are
// byte for byte those one process writes for the same state. On resume each rank reads only
// selection()'s tensors (its stage's, at their offsets; every byte of both files still passes
// through their checksums, streamed), the compatibility check judging the whole model from
// the header, and local_optimizer_state() renumbers the optimizer's part for this stage. A
// pipelined run and one process resume each other's checkpoints.
#include <memory>
#include <string>
#include <vector>

#include "comm/pipeline/pipeline.h"
#include "comm/process_group.h"
#include "train/strategy/state_ownership.h"

namespace sonata {

class StageOwnership final : public StateOwnership {
 public:
  // `stage`: this rank's, cut from `model` (whose state_dict names every entry), of replica
  // `replica`; `stage_group`: that replica's stages; `world`: every rank. Refuses a model
  // entry that none of the stage's layers holds.
  StageOwnership(std::shared_ptr<PipelineStage> stage, Module& model,
                 std::shared_ptr<ProcessGroup> world, std::shared_ptr<ProcessGroup> stage_group,
                 int replica);

  // StateOwnership.
  std::vector<ParamGroup> optimizer_groups(std::vector<ParamGroup> whole) override;
  PartialTrainingState read_checkpoint(const std::string& path,
                                       CheckpointSource* source) const override;
  bool on_any_holder(bool here) const override;  // over the world
  std::string write_checkpoint(CheckpointManager* writer,
                               const std::function<TrainingState()>& capture, int64_t step,
                               std::optional<double> metric) const override;
  // Every rank's whole model set to replica 0's stages, entry by entry (a collective over the
  // world); the released entries get memory again until the next step releases them.
  void gather_model() override;

  // Which rows of the whole entry `name` this stage holds (rows == 0: all of it).
  RowShard rows_of(const std::string& name) const;
  // Each stage's share of the model's parameters (rows of a cut layer counted where they
  // live).
  std::vector<int64_t> parameters_by_stage() const;

  // The parts read_checkpoint() and write_checkpoint() are made of.
  // What this stage reads of a one-process checkpoint: its model entries (for a layer cut
  // into row pieces, its rows alone), and the optimizer state of its parameters (one
  // process's numbering). Needs optimizer_groups() first.
  CheckpointSelection selection() const;
  // The entries of a checkpoint's `model` that are this stage's row pieces copied into them
  // and removed, leaving those the whole model loads.
  void take_model_pieces(NamedTensors& model) const;
  // A checkpoint's (one process's) optimizer state as this stage's optimizer numbers it: its
  // parameters' entries, renumbered. Needs optimizer_groups() first.
  OptimizerState local_optimizer_state(const OptimizerState& whole) const;
  // One process's checkpoint of `local` (this rank's state: its optimizer's, the run's
  // scalars and texts), under the whole model's names and numbering. On world rank 0, for
  // CheckpointManager::save: a source whose fetches receive each other stage's tensor when
  // the writer asks for it, while the other ranks of replica 0 are in serve_checkpoint(),
  // sending their stage's tensors one at a time. A collective over replica 0's stage group
  // (their lists of tensors first, then the tensors); other replicas return at once.
  TrainingStateSource checkpoint_source(const TrainingState& local) const;
  void serve_checkpoint(const TrainingState& local) const;

 private:
  // One stage's part of an entry of the whole model's state.
  struct StatePart {
    int stage = 0;
    RowShard shard;  // rows == 0: the whole entry
  };
  // This stage's part of entry `k` of the whole model's state (nullptr: none).
  const StatePart* part_of_mine(size_t k) const;

  // This stage's share of a checkpoint in the order the writer fetches it: its model
  // entries, its optimizer tensors and per-parameter scalars under the whole model's
  // numbering (`local`: this stage's optimizer's state).
  struct StageCheckpoint {
    NamedTensors model, optimizer, step_scalars;
  };
  StageCheckpoint stage_checkpoint(const OptimizerState& local) const;

  std::shared_ptr<PipelineStage> stage_;
  Module& model_;
  std::shared_ptr<ProcessGroup> world_, stage_group_;
  int replica_ = 0;
  // The whole model's state_dict names, with the stages that hold each entry: one stage
  // holds it whole, or each of several stages holds rows of it (in row order).
  std::vector<std::string> names_;
  std::vector<std::vector<StatePart>> parts_;
  // This stage's optimizer parameter k is the whole model's optimizer_index_[k]; the whole
  // model's optimizer groups hold whole_group_sizes_[g] parameters, this stage's
  // stage_group_sizes_[g].
  std::vector<int64_t> optimizer_index_;
  std::vector<RowShard> optimizer_shard_;  // of this stage's parameter k (rows 0: whole)
  std::vector<size_t> whole_group_sizes_, stage_group_sizes_;
};

}  // namespace sonata

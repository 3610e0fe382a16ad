#pragma once
// trainer --pipeline-stages S: the world as D = world / S data-parallel replicas of an S-stage
// pipeline, rank r running stage r % S of replica r / S (comm/pipeline/pipeline.h). Each
// optimizer step runs its M loader batches (--micro-batches, which is --accum-steps) through
// the pipeline as its micro-batches, so a pipelined run computes what one process computes
// with --accum-steps M; with D > 1 the reducer averages stage s's gradients over the replicas.
//
// Every rank builds the whole model (one process's initialisation, so results stay equal),
// then keeps only its stage: start_training() and every step release the other stages'
// parameters and buffers (their handles stay, their storage goes), and the optimizer, built
// over stage_param_groups(), holds this stage's state alone. evaluate() runs the eval
// batches forward through the stages. sync_model() fills every rank's whole model again
// from replica 0's stages (the end of a run, for whoever uses the model next); the next step
// releases the other stages again.
//
// A layer larger than a stage's share of the model (VGG's classifier.0) may be cut into row
// pieces across consecutive stages (partition_with_row_pieces, comm/pipeline/partition.h):
// each of those stages trains rows of it, and no rank keeps the whole layer.
//
// Checkpoints stay the single-process ones, under the whole model's names and parameter
// indices, and no rank assembles one whole. To save, replica 0's stages send world
// rank 0 the names, dtypes and shapes of their state first, so that it writes each file's
// header before any data; then checkpoint_source() fetches each tensor as the writer
// reaches it (its own from its stage, the others' received one at a time from
// serve_checkpoint() on their stage), so that rank 0 holds its stage plus the one tensor in
// flight, and the files are byte for byte those one process writes for the same state. On
// resume each rank reads only checkpoint_selection()'s tensors (its stage's, at their
// offsets; every byte of both files still passes through their checksums, streamed), the
// compatibility check judging the whole model from the header, and stage_optimizer_state()
// renumbers the optimizer's part for this stage. A pipelined run and one process resume each
// other's checkpoints.
#include <memory>
#include <string>
#include <vector>

#include "comm/pipeline/pipeline.h"
#include "comm/process_group.h"
#include "comm/reducer.h"
#include "engine/amp/loss_scaler.h"
#include "engine/checkpoint/checkpoint.h"
#include "engine/optim/optimizer.h"
#include "train/task.h"
#include "train/trainer_options.h"

namespace sonata {

class PipelineParallel {
 public:
  // `loss` runs on the last stage for each micro-batch, with the output and that batch's
  // host tensors, and returns what its backward starts from (the pipeline divides it by M).
  // A collective over `world`.
  PipelineParallel(const TrainerOptions& options, Task& task, std::shared_ptr<ProcessGroup> world,
                   Device device, PipelineLoss loss);

  int stage() const { return stage_index_; }
  int stages() const { return stage_count_; }
  int replica() const { return replica_; }
  int replicas() const { return replica_count_; }
  bool is_last_stage() const { return stage_index_ + 1 == stage_count_; }
  // "2 stages (layers 0-6 | 7-10, by parameter bytes), 1f1b, x 2 replicas".
  std::string describe() const;

  // This stage's parameters: what the scaler, the clipping and the reducer see.
  std::vector<Tensor> parameters() const { return stage_->parameters(); }
  // This stage's parameters and buffers under the whole model's names (a row piece of a cut
  // layer under its layer's names), and which rows of the whole entry `name` it holds
  // (rows == 0: all of it).
  NamedTensors state_dict() const { return stage_->state_dict(); }
  RowShard rows_of(const std::string& name) const;

  // The optimizer's groups for this stage: `whole` (the whole model's, as one process builds
  // them) with only this stage's parameters, every group kept (maybe empty) so that the
  // groups number as in one process. Call once, before the other stages are released.
  std::vector<ParamGroup> stage_param_groups(const std::vector<ParamGroup>& whole);
  // A checkpoint's (one process's) optimizer state as this stage's optimizer numbers it:
  // its parameters' entries, renumbered. Needs stage_param_groups() first.
  OptimizerState stage_optimizer_state(const OptimizerState& whole) const;

  // After the weights are final (built, resumed): replica 0's stages copied to the other
  // replicas, and the other stages released.
  void start_training();

  // One optimizer step's forwards and backwards: batches[m] is micro-batch m.
  PipelineStepResult step(const std::vector<HostBatch>& batches, Device device);

  // Before the optimizer: the scaler's overflow flag summed over every rank (one skips, all
  // skip), and the norm over every stage's gradients (`params`: this stage's, as
  // parameters() gave them), clipped to `max_norm` when > 0. Returns the norm (0-dim f32 on
  // the CPU).
  void agree_found_inf(LossScaler& scaler);
  Tensor clip_global_norm(const std::vector<Tensor>& params, double max_norm);

  // Every rank's whole model set to replica 0's stages (a collective over the world); the
  // released stages are filled again until the next step.
  void sync_model();
  // The counts of an evaluation of `split` run through the pipeline (a collective over the
  // world): each replica evaluates its shard with replica 0's weights, its last stage
  // counting (Task::eval_pass); the other ranks return the same names with zeros, so the
  // sums over the world are the evaluation's.
  EvalCounts evaluate(const std::string& split, Device device);

  // One process's checkpoint of `local` (this rank's capture_training_state: its optimizer's
  // state, the run's scalars and texts), under the whole model's names and numbering. On
  // world rank 0, for CheckpointManager::save: the checkpoint as a source whose fetches
  // receive each other stage's tensor when the writer asks for it, while the other ranks of
  // replica 0 are in serve_checkpoint(), sending their stage's tensors one at a time. A
  // collective over replica 0's stage group (their lists of tensors first, then the
  // tensors); other replicas return at once.
  TrainingStateSource checkpoint_source(const TrainingState& local) const;
  void serve_checkpoint(const TrainingState& local) const;
  // What this stage reads of a one-process checkpoint on resume: its model entries, and the
  // optimizer state of its parameters (one process's numbering, which
  // stage_optimizer_state() renumbers). Needs stage_param_groups() first.
  // For a layer cut into row pieces, the selection reads this stage's rows alone.
  CheckpointSelection checkpoint_selection() const;
  // Resume: the entries of a checkpoint's `model` (read by checkpoint_selection()) that are
  // this stage's row pieces copied into them and removed, leaving those the whole model
  // loads.
  void take_model_pieces(NamedTensors& model) const;

 private:
  std::shared_ptr<ProcessGroup> world_;
  std::shared_ptr<ProcessGroup> stage_group_;    // this replica's pipeline
  std::shared_ptr<ProcessGroup> replica_group_;  // stage s of every replica (D > 1)
  int stage_count_ = 1, stage_index_ = 0, replica_count_ = 1, replica_ = 0;
  Task& task_;
  std::shared_ptr<PipelineStage> stage_;
  std::unique_ptr<Pipeline> pipeline_;
  std::unique_ptr<Reducer> reducer_;
  std::string partition_text_;
  std::vector<int64_t> stage_parameters_;  // each stage's share of the model's parameters
  PipelineSchedule schedule_;
  // The whole model's state_dict names and shapes, with the stages (the world ranks of
  // replica 0) that hold each entry: one stage holds it whole, or, for a layer cut into
  // row pieces, each of several stages holds rows of it (in row order).
  struct StatePart {
    int stage = 0;
    RowShard shard;  // rows == 0: the whole entry
  };
  std::vector<std::string> state_names_;
  std::vector<Shape> state_shapes_;
  std::vector<std::vector<StatePart>> state_parts_;
  // This stage's part of entry `k` of the whole model's state (nullptr: none).
  const StatePart* part_of_mine(size_t k) const;
  bool released_ = false;  // the other stages' storage is given back
  // This stage's optimizer parameter k is the whole model's optimizer_index_[k]; the whole
  // model's optimizer groups hold whole_group_sizes_[g] parameters, this stage's
  // stage_group_sizes_[g].
  std::vector<int64_t> optimizer_index_;
  std::vector<RowShard> optimizer_shard_;  // of this stage's parameter k (rows 0: whole)
  std::vector<size_t> whole_group_sizes_, stage_group_sizes_;

  // This stage's share of a checkpoint in the order the writer fetches it: its model
  // entries, its optimizer tensors and per-parameter scalars under the whole model's
  // numbering (`local`: this stage's optimizer's state).
  struct StageCheckpoint {
    NamedTensors model, optimizer, step_scalars;
  };
  StageCheckpoint stage_checkpoint(const OptimizerState& local) const;

  void release_other_stages();
  // Replica 0's stage state on every replica (a collective over the replica group).
  void broadcast_stage_from_replica0();
};

}  // namespace sonata

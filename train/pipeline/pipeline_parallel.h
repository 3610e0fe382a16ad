#pragma once
// trainer --pipeline-stages S: the world as D = world / S data-parallel replicas of an S-stage
// pipeline, rank r running stage r % S of replica r / S (comm/pipeline/pipeline.h), as a
// training strategy: the pipeline or hybrid one. Each optimizer step runs its M loader
// batches (--accum-steps) through the pipeline as its micro-batches, so a pipelined run
// computes what one process computes with --accum-steps M; with D > 1 the reducer averages
// stage s's gradients over the replicas.
//
// The loop hands step() the step's batches and its loss scaler, as PyTorch's pipelining
// schedules take a loss function: the last stage computes the task's loss (a value, not a
// call back into the loop), scales it and runs the backward in the schedule, and returns
// each micro-batch's loss to the loop, which tracks them as it tracks one process's.
//
// Every rank describes the whole model (one process's initialisation, so results stay equal),
// then keeps only its stage (build_pipeline.h): the other stages' tensors are deferred again
// (engine/nn/release.h), keeping their handles and shapes, never their memory, and the
// optimizer, built over ownership().optimizer_groups(), holds this stage's state alone.
// evaluate() runs the eval batches forward through the stages. ownership().gather_model()
// fills every rank's whole model again from replica 0's stages (the end of a run, for whoever
// uses the model next); the next step releases the other stages again.
//
// A layer larger than a stage's share of the model (VGG's classifier.0) may be cut into row
// pieces across consecutive stages (partition_with_row_pieces, comm/pipeline/partition.h):
// each of those stages trains rows of it, and no rank keeps the whole layer.
//
// Which stage holds which tensor, and so how the optimizer's groups and one process's
// checkpoints map onto the stages, is the ownership map's (stage_ownership.h).
#include <memory>
#include <string>
#include <vector>

#include "engine/amp/loss_scaler.h"
#include "train/pipeline/build_pipeline.h"
#include "train/pipeline/stage_ownership.h"
#include "train/strategy/training_strategy.h"
#include "train/task.h"
#include "train/trainer_options.h"

namespace sonata {

class PipelineParallel : public TrainingStrategy {
 public:
  // The last stage's loss of each micro-batch is `task.loss`. A collective over `world`,
  // which has a multiple of --pipeline-stages ranks.
  PipelineParallel(const TrainerOptions& options, Task& task, std::shared_ptr<ProcessGroup> world,
                   Device device);

  // Pipeline with one replica, hybrid with more.
  StrategyKind kind() const override;
  int stage() const { return built_.stage_index; }
  int stages() const { return built_.stages; }
  // The data shard this rank reads: its replica's.
  int64_t replica() const override { return built_.replica; }
  int64_t replicas() const override { return built_.replicas; }
  const char* shard_name() const override { return "replicas"; }
  bool is_last_stage() const { return built_.stage->is_last(); }
  // "2 stages (layers 0-6 | 7-10, by parameter bytes), 1f1b, x 2 replicas".
  std::string describe() const;
  // The run's start line: describe(), and which stage of which replica this rank runs.
  std::string describe(int64_t batch_size) const override;

  // This stage's parameters: what the scaler, the clipping and the reducer see.
  std::vector<Tensor> parameters() const override { return built_.stage->parameters(); }
  // This stage's parameters and buffers under the whole model's names (a row piece of a cut
  // layer under its layer's names), and which rows of the whole entry `name` it holds
  // (rows == 0: all of it).
  NamedTensors state_dict() const { return built_.stage->state_dict(); }
  RowShard rows_of(const std::string& name) const { return ownership_->rows_of(name); }

  // Which stage holds which tensor: for the optimizer's groups, checkpoints and resume.
  StageOwnership& ownership() { return *ownership_; }

  // After the weights are final (built, resumed): replica 0's stages copied to the other
  // replicas.
  void start_training();
  void start() override { start_training(); }

  // One optimizer step's forwards and backwards: batches[m] is micro-batch m. The last
  // stage's losses are scaled by `scaler` (none: unscaled) before their backward; the
  // result's `losses` are the micro-batches' (unscaled, detached) on the last stage, none
  // elsewhere.
  PipelineStepResult step(const std::vector<HostBatch>& batches, Device device,
                          LossScaler* scaler = nullptr);

  // Before the optimizer: the scaler's overflow flag summed over every rank (one skips, all
  // skip), and the norm over every stage's gradients (`params`: this stage's, as
  // parameters() gave them), clipped to `max_norm` when > 0. Returns the norm (0-dim f32 on
  // the CPU).
  Tensor agree_and_clip(LossScaler& scaler, const std::vector<Tensor>& params,
                        double max_norm) override;
  void agree_found_inf(LossScaler& scaler);
  Tensor clip_global_norm(const std::vector<Tensor>& params, double max_norm);

  // The counts of an evaluation of `split` run through the pipeline (a collective over the
  // world): each replica evaluates its shard with replica 0's weights, its last stage
  // counting (Task::eval_pass); the other ranks return the same names with zeros, so the
  // sums over the world are the evaluation's.
  EvalCounts evaluate(const std::string& split, Device device);
  EvalCounts evaluate(Task& task, const std::string& split, Device device, int64_t rank,
                      int64_t world) override;

 private:
  Task& task_;
  BuiltPipeline built_;
  std::shared_ptr<StageOwnership> ownership_;
  // The other stages' tensors (PipelineStage::other_stages_state), released again by each
  // step after gather_model() filled them: those still deferred are skipped.
  NamedTensors others_;

  // Replica 0's stage state on every replica (a collective over the replica group).
  void broadcast_stage_from_replica0();
};

}  // namespace sonata

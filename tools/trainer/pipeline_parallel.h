#pragma once
// trainer --pipeline-stages S: the world as D = world / S data-parallel replicas of an S-stage
// pipeline, rank r running stage r % S of replica r / S (comm/pipeline/pipeline.h). Each
// optimizer step runs its M loader batches (--micro-batches, which is --accum-steps) through
// the pipeline as its micro-batches, so a pipelined run computes what one process computes
// with --accum-steps M; with D > 1 the reducer averages stage s's gradients over the replicas.
//
// Every rank keeps the whole model, but only its stage is trained there. Before an
// evaluation or a checkpoint, sync_model() hands each stage's state from replica 0 to every
// rank, so both run as in one process; checkpoints are the single-process ones (the
// optimizer's state gathered from the stages under the whole model's parameter indices),
// and a single-process checkpoint resumes into a pipeline as it is.
#include <memory>
#include <string>
#include <vector>

#include "comm/pipeline/pipeline.h"
#include "comm/process_group.h"
#include "comm/reducer.h"
#include "engine/amp/loss_scaler.h"
#include "engine/optim/optimizer.h"
#include "tools/trainer/task.h"
#include "tools/trainer/trainer_options.h"

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

  // One optimizer step's forwards and backwards: batches[m] is micro-batch m.
  PipelineStepResult step(const std::vector<HostBatch>& batches, Device device);

  // Before the optimizer: the scaler's overflow flag summed over every rank (one skips, all
  // skip), and the norm over every stage's gradients (`params`: this stage's, as
  // parameters() gave them), clipped to `max_norm` when > 0. Returns the norm (0-dim f32 on
  // the CPU).
  void agree_found_inf(LossScaler& scaler);
  Tensor clip_global_norm(const std::vector<Tensor>& params, double max_norm);

  // Every rank's whole model set to replica 0's stages (a collective over the world).
  void sync_model();
  // The optimizer's state as one process holds it, on world rank 0 (a collective over the
  // stage group of replica 0; other replicas return at once). Elsewhere: empty.
  OptimizerState gather_optimizer_state(const Optimizer& optimizer) const;

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
  PipelineSchedule schedule_;
  // The whole model's state in state_dict order, with the world rank holding each entry.
  NamedTensors model_state_;
  std::vector<int> state_owner_;
};

}  // namespace sonata

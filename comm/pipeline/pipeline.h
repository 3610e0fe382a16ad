#pragma once
// Pipeline parallelism: one rank per stage of a model's layer sequence, M micro-batches per
// step run by a schedule (comm/pipeline/schedule.h), activations sent forward and their
// gradients backward with the stage group's asynchronous send/recv.
//
// Per step, on every rank of the stage group:
//
//   optimizer.zero_grad();                  // not with a reducer: it zeroes its own buffers
//   result = pipeline.step(batch, targets, reducer);  // batch: the first stage's; targets:
//   optimizer.step();                                 // the last stage's; ignored elsewhere
//
// The last stage computes loss(output, micro-batch targets) / M for each micro-batch and
// backpropagates it, so gradients accumulate to the mean over equal micro-batches; BatchNorm
// sees each micro-batch on its own, as in GPipe. The loss (the sum of those terms) reaches
// stage 0, which with the last stage reports it.
//
// Hybrid (data x pipeline): each replica's stage s runs with the `reducer` over the group of
// stage s across replicas; every backward but the last runs under no_sync and finish()
// follows the last, so the replicas' gradients are averaged once per step. The two
// communicators never have operations in flight at once (NCCL's user guide: that can
// deadlock unless every rank issues them in one order): the stage's messages are finished
// before the last backward, whose all-reduces then run alone, and its gradient goes
// upstream after finish().
//
// Messages are posted so that each pair of neighbours posts its sends and receives in one
// order (that of the downstream stage's schedule): NCCL, which runs them in posting order on
// one stream, cannot deadlock; MPI overlaps them with computation either way.
#include <functional>
#include <limits>
#include <memory>
#include <vector>

#include "comm/pipeline/schedule.h"
#include "comm/process_group.h"
#include "comm/reducer.h"
#include "engine/amp/loss_scaler.h"
#include "engine/nn/layer_sequence.h"

namespace sonata {

// One stage: the layers in `ranges[stage]` of a model's sequence.
class PipelineStage {
 public:
  PipelineStage(LayerSequence layers, std::vector<LayerRange> ranges, int stage);

  int index() const { return stage_; }
  int count() const { return int(ranges_.size()); }
  bool is_first() const { return stage_ == 0; }
  bool is_last() const { return stage_ + 1 == count(); }
  LayerRange range() const { return ranges_[size_t(stage_)]; }
  const std::vector<LayerRange>& ranges() const { return ranges_; }
  const LayerSequence& layers() const { return layers_; }

  // This stage's parameters and state under the whole model's names.
  NamedTensors named_parameters() const { return layer_parameters(layers_, range()); }
  std::vector<Tensor> parameters() const;
  NamedTensors state_dict() const { return layer_state_dict(layers_, range()); }
  // The other stages' parameters and buffers (those this stage shares left out), and those
  // of the whole layers cut into row pieces (ModelLayer::whole), which no stage trains.
  NamedTensors other_stages_state() const;
  // Frees the storage of other_stages_state() (engine/nn/release.h: deferred again, shapes
  // kept), so that this process holds only its stage's weights; their handles stay valid and
  // can be filled again.
  void release_other_stages() const;

  LayerValue forward(const LayerValue& input) const { return run_layers(layers_, range(), input); }

 private:
  LayerSequence layers_;
  std::vector<LayerRange> ranges_;
  int stage_;
};

// The micro-batch loss on the last stage: a one-element tensor (the mean over its samples).
// A value, as PyTorch's pipelining schedules take one: it reads the output and the targets
// and calls nothing back in its caller (the caller gets the losses in the step's result).
using PipelineLoss =
    std::function<Tensor(const LayerValue& output, const std::vector<Tensor>& targets)>;

struct PipelineOptions {
  PipelineSchedule schedule = PipelineSchedule::one_f_one_b;
  int micro_batches = 1;
};

struct PipelineStepResult {
  // Sum over micro-batches of loss / M, on stage 0 and the last stage; NaN on the others.
  double loss = std::numeric_limits<double>::quiet_NaN();
  double step_seconds = 0;  // wall time of the step on this rank
  double wait_seconds = 0;  // of which blocked on receives and sends (the bubble and transfers)
  // On the last stage, each micro-batch's loss (detached, before the scaler and 1/M);
  // empty on the others.
  std::vector<Tensor> losses;
};

class Pipeline {
 public:
  // `group` holds the stages: its rank r runs stage r (world size = number of stages).
  Pipeline(std::shared_ptr<ProcessGroup> group, std::shared_ptr<PipelineStage> stage,
           PipelineLoss loss, const PipelineOptions& options);

  // One step's forwards and backwards (a collective over the stage group). `batch` is read
  // on the first stage, `targets` (split along dim 0 like the batch) on the last, where
  // `scaler` (if any) scales each loss before its backward, as a GradScaler does.
  PipelineStepResult step(const LayerValue& batch, const std::vector<Tensor>& targets,
                          Reducer* reducer = nullptr, LossScaler* scaler = nullptr);
  // The same over micro-batches cut by the caller (a trainer's loader batches, each of its
  // own length): `inputs[m]` read on the first stage, `targets[m]` on the last, and
  // `micro_batches` (the step's M, which may differ from options().micro_batches) on every
  // stage.
  PipelineStepResult step_micro_batches(int micro_batches, const std::vector<LayerValue>& inputs,
                                        const std::vector<std::vector<Tensor>>& targets,
                                        Reducer* reducer = nullptr, LossScaler* scaler = nullptr);

  // Forward passes alone (evaluation; a collective over the stage group): `count` batches in
  // order, one in flight, without gradients. `input(b)` is called on the first stage,
  // `take(b, output)` on the last with batch b's output.
  void forward_only(int64_t count, const std::function<LayerValue(int64_t)>& input,
                    const std::function<void(int64_t, const LayerValue&)>& take);

  PipelineStage& stage() { return *stage_; }
  ProcessGroup& group() { return *group_; }
  const PipelineOptions& options() const { return options_; }

 private:
  std::shared_ptr<ProcessGroup> group_;
  std::shared_ptr<PipelineStage> stage_;
  PipelineLoss loss_;
  PipelineOptions options_;
};

}  // namespace sonata

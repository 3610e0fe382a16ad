#pragma once
// How a run spreads one optimizer step over processes, behind one interface, so that the
// training loop (train_loop.cpp) never asks which it has: one process, data parallel (DDP),
// a pipeline of stages, or data-parallel replicas of a pipeline (hybrid). The loop gives a
// strategy its micro-batches and its loss hooks; the strategy runs forward and backward,
// agrees on the gradients' norm and overflow over the ranks that share them, and prepares
// the model for an evaluation or a checkpoint.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "comm/process_group.h"
#include "data/loader/batch_loader.h"
#include "engine/amp/loss_scaler.h"
#include "engine/checkpoint/checkpoint.h"
#include "engine/device.h"
#include "engine/nn/module.h"
#include "engine/optim/optimizer.h"
#include "train/task.h"
#include "train/trainer_options.h"

namespace sonata {

enum class StrategyKind { single_process, data_parallel, pipeline, hybrid };

// "single process", "data parallel", "pipeline", "hybrid".
const char* strategy_name(StrategyKind kind);

// The strategy the options call for in a world of `world_size` processes: --pipeline-stages
// S > 1 is a pipeline (S processes) or hybrid (a multiple of S), else data parallel over
// more than one process. Throws, naming --pipeline-stages, when S does not divide the world.
StrategyKind choose_strategy(const TrainerOptions& options, int world_size);

// What a strategy calls back into the loop for, once per micro-batch.
struct LossHooks {
  std::function<void(const Tensor&)> track;    // the loss (detached), for the log
  std::function<Tensor(const Tensor&)> scale;  // the loss scaler's scale()
};

class TrainingStrategy {
 public:
  // `world`: every process of the run; null in one process.
  explicit TrainingStrategy(std::shared_ptr<ProcessGroup> world);
  virtual ~TrainingStrategy() = default;
  TrainingStrategy(const TrainingStrategy&) = delete;
  TrainingStrategy& operator=(const TrainingStrategy&) = delete;

  virtual StrategyKind kind() const = 0;

  // The data shard this rank reads: `replica` of `replicas` (the sampler's rank and world).
  virtual int64_t replica() const = 0;
  virtual int64_t replicas() const = 0;
  // What the start line calls the shards: "processes" or "replicas".
  virtual const char* shard_name() const { return "processes"; }

  // After the weights are final (moved, cast, resumed): every rank starts from the same ones.
  virtual void start() {}
  // The line printed once started ("data parallel over 2 processes ..."); empty: none.
  virtual std::string describe(int64_t batch_size) const = 0;

  // What the loss scaler, the clipping and the optimizer's step see.
  virtual std::vector<Tensor> parameters() const = 0;

  // Forward and backward of one optimizer step's `micro` micro-batches, next_batch() giving
  // each in turn. Returns the items this rank counts (each item once over the world).
  virtual int64_t step(size_t micro, const std::function<HostBatch()>& next_batch) = 0;

  // Unscaled gradients in hand: the overflow flag agreed by every rank that steps, and the
  // global norm of `params`, clipped to `max_norm` when > 0 (a 0-dim f32 tensor).
  virtual Tensor agree_and_clip(LossScaler& scaler, const std::vector<Tensor>& params,
                                double max_norm);

  // The optimizer's parameter groups, from one process's: a pipeline stage keeps its own
  // parameters only (the groups stay, emptied, so that their numbering does).
  virtual std::vector<ParamGroup> optimizer_groups(std::vector<ParamGroup> whole) const {
    return whole;
  }
  // Which tensors of a checkpoint this rank reads on resume (nullopt: all of them).
  virtual std::optional<CheckpointSelection> checkpoint_selection() const { return std::nullopt; }
  // A resumed checkpoint's model entries that this rank holds outside the model (a pipeline
  // stage's row pieces of a cut layer) taken out of `model` into their place; what remains
  // goes to the model.
  virtual void take_model_pieces(NamedTensors& /*model*/) const {}
  // A resumed checkpoint's optimizer state (one process's numbering) as this rank's optimizer
  // holds it.
  virtual OptimizerState local_optimizer_state(OptimizerState whole) const { return whole; }
  // This rank's evaluation counts of `split` (summed over ranks by the loop). The default:
  // before_evaluation(), then evaluate() (train/task.h) of this rank's shard.
  virtual EvalCounts evaluate(Task& task, const std::string& split, Device device, int64_t rank,
                              int64_t world);
  // Before an evaluation (every rank evaluates the whole model on its shard) and after the
  // last step (every rank's model whole, for whoever uses it next).
  virtual void before_evaluation() {}
  virtual void after_training() {}

  // Whether `bad_here` on any rank that saves checkpoints stops this one being written. A
  // collective where saving is (every rank then calls it alike).
  virtual bool bad_anywhere(bool bad_here) { return bad_here; }
  // Whether every rank takes part in writing a checkpoint (not only the one that writes).
  virtual bool saves_on_every_rank() const { return false; }
  // Writes a checkpoint in one process's format through `checkpoints` (the writer's; null on
  // the other ranks) from `state`, this rank's capture_training_state. The default: the
  // writer saves `state` as it is. Where the strategy spreads the model and the optimizer,
  // every rank takes part (saves_on_every_rank()), streaming its part to the writer. Returns
  // the step folder written, "" on the other ranks.
  virtual std::string save_checkpoint(CheckpointManager* checkpoints, const TrainingState& state,
                                      int64_t step, std::optional<double> metric);

  // `values` summed over every process (identity in one process).
  std::vector<double> sum_over_ranks(std::vector<double> values) const;

 protected:
  std::shared_ptr<ProcessGroup> world_;
};

// The strategy of choose_strategy(options, world size), built. `group`: null or of size 1
// in one process. `model` is task.model(), on its device.
std::unique_ptr<TrainingStrategy> make_training_strategy(const TrainerOptions& options, Task& task,
                                                         std::shared_ptr<ProcessGroup> group,
                                                         Device device, LossHooks hooks);

}  // namespace sonata

#pragma once
// How a run spreads one optimizer step over processes, behind one interface, so that the
// training loop (train_loop.cpp) never asks which it has: one process, data parallel (DDP),
// a pipeline of stages, or data-parallel replicas of a pipeline (hybrid). The loop gives a
// strategy its micro-batches and its loss hooks; the strategy runs forward and backward,
// agrees on the gradients' norm and overflow over the ranks that share them, and evaluates.
// Which rank holds which tensor is the strategy's ownership map (state_ownership.h), which
// the optimizer setup, resume and checkpoints consult without knowing the strategy.
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
#include "train/strategy/state_ownership.h"
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
  // `ownership`: which rank holds which tensor; null: every rank all of them (the identity).
  explicit TrainingStrategy(std::shared_ptr<ProcessGroup> world,
                            std::shared_ptr<StateOwnership> ownership = nullptr);
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

  // This rank's evaluation counts of `split` (summed over ranks by the loop). The default:
  // before_evaluation(), then evaluate() (train/task.h) of this rank's shard.
  virtual EvalCounts evaluate(Task& task, const std::string& split, Device device, int64_t rank,
                              int64_t world);
  // Before an evaluation (every rank evaluates the whole model on its shard).
  virtual void before_evaluation() {}

  // Which rank holds which tensor: what the optimizer's groups, resume and checkpoints
  // consult (the identity unless the strategy spreads the model).
  StateOwnership& ownership() const { return *ownership_; }

  // `values` summed over every process (identity in one process).
  std::vector<double> sum_over_ranks(std::vector<double> values) const;

 protected:
  // For a strategy whose map is made with it (after the base class).
  void set_ownership(std::shared_ptr<StateOwnership> ownership) {
    ownership_ = std::move(ownership);
  }
  std::shared_ptr<ProcessGroup> world_;

 private:
  std::shared_ptr<StateOwnership> ownership_;
};

// The strategy of choose_strategy(options, world size), built. `group`: null or of size 1
// in one process. `model` is task.model(), on its device.
std::unique_ptr<TrainingStrategy> make_training_strategy(const TrainerOptions& options, Task& task,
                                                         std::shared_ptr<ProcessGroup> group,
                                                         Device device, LossHooks hooks);

}  // namespace sonata

#pragma once
// How a run spreads one optimizer step over processes: one process, data parallel (DDP), a
// pipeline of stages, or data-parallel replicas of a pipeline (hybrid). The training loop
// (train_loop.cpp) owns the step, as Caffe's Solver::Step does: it takes each batch, runs the
// forward, the loss and the backward, and steps the optimizer; a strategy is called at named
// points of that step (before and after a micro-batch, gradients ready, before evaluation)
// and never calls back into the loop. A pipeline runs a step's forwards and backwards in its
// own schedule (train/pipeline/pipeline_parallel.h) and hands the loop its losses.
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

  // The named points of one optimizer step of `micro` micro-batches, in the loop's order.
  // Before micro-batch m's forward (DDP: rank 0's buffers, and the reducer armed, its
  // all-reduces held back (no_sync) but on the last micro-batch).
  virtual void before_micro_batch(size_t /*m*/, size_t /*micro*/) {}
  // After micro-batch m's backward.
  virtual void after_micro_batch() {}
  // Every backward done: the gradients reduced over the ranks that share them (DDP: the
  // reducer's last buckets finished), before the scaler unscales them.
  virtual void reduce_gradients() {}
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

}  // namespace sonata

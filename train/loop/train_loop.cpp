#include "train/train_loop.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <tuple>

#include "base/error.h"
#include "base/nvtx.h"
#include "engine/ops.h"
#include "engine/optim/lr_schedule.h"
#include "train/loop/train_loop_run.h"
#include "train/pipeline/pipeline_parallel.h"
#include "train/setup/init_from.h"
#include "train/setup/optimizer_choice.h"
#include "train/setup/precision.h"
#include "train/setup/sampler_choice.h"
#include "train/setup/strategy_choice.h"
#include "train/state/manifest_fingerprint.h"
#include "train/state/run_folder.h"
#include "train/strategy/single_process_strategy.h"

namespace sonata {

TrainResult run_training(const TrainerOptions& options, Task& task, Device device,
                         std::shared_ptr<ProcessGroup> group) {
  TrainingRun run(options, task, device, std::move(group));
  return options.eval_only ? run.evaluate_only() : run.train();
}

TrainingRun::TrainingRun(const TrainerOptions& o, Task& task, Device device,
                         std::shared_ptr<ProcessGroup> group)
    : o_(o),
      task_(task),
      device_(device),
      group_(group && group->world_size() > 1 ? std::move(group) : nullptr),
      rank_(group_ ? group_->rank() : 0),
      world_(group_ ? group_->world_size() : 1),
      checkpoint_dir_lock_(rank_ == 0 && !o.eval_only && !o.checkpoint_dir.empty()
                               ? claim_checkpoint_dir(o)
                               : nullptr),
      model_(task.model()),
      metrics_path_(!o.metrics.empty()          ? o.metrics
                    : !o.checkpoint_dir.empty() ? o.checkpoint_dir + "/metrics.jsonl"
                                                : std::string("metrics.jsonl")),
      // An evaluation of a finished run may read a folder it cannot write: it still runs.
      metrics_(rank_ == 0
                   ? MetricsLog(metrics_path_, !o.resume.empty(),
                                o.eval_only ? IfUnwritable::write_nothing : IfUnwritable::refuse)
                   : MetricsLog()),
      // Off a terminal, about four lines an epoch (at log points).
      progress_(rank_ == 0 ? o.progress.value() : ProgressMode::off,
                std::max<int64_t>(
                    1, task.train_items() / o.batch_size / o.accum_steps / 4 / o.log_every) *
                    o.log_every),
      // Two batches ahead per worker: enough to hide a slow one behind the step.
      loader_([&task](const std::vector<int64_t>& items,
                      int64_t epoch) { return task.prepare(items, epoch); },
              o.workers, 2 * o.workers, /*pin_for=*/device),
      stager_(device) {
  if (!o.init_from.empty()) progress_.print(init_from_weights(model_, o.init_from));
  if (!o.train_manifest.empty())
    train_manifest_fingerprint_ = manifest_fingerprint(o.train_manifest);
  // Before any split: the pipeline's, SyncBatchNorm's and the reducer's groups inherit it.
  if (group_ && o.comm_timeout > 0) group_->set_timeout(o.comm_timeout);
  model_.to(device);
  cast_for_precision(model_, compute_dtype(o.precision.value()));
  model_.train();
  std::tie(profile_first_, profile_last_) = o.profile_range();
  if (!o.range_times.empty()) range_times_enable(true);
}

TrainResult TrainingRun::train() {
  // From here a scheduler's warning or Ctrl-C ends the run after a step, checkpointed.
  StopSignals stop_signals;
  // fp16 scales the loss (GradScaler); fp32 and bf16 keep the scaler's inf/nan check at a
  // fixed scale of 1, so a non-finite gradient skips the step instead of poisoning weights.
  LossScalerOptions scaling;
  if (o_.precision != Precision::fp16) {
    scaling.init_scale = 1.0;
    scaling.growth_factor = 1.0;
    scaling.backoff_factor = 1.0;
  }
  scaler_ = std::make_unique<LossScaler>(device_, scaling);
  strategy_ = make_training_strategy(o_, task_, group_, device_);
  // A pipeline runs a step's forwards and backwards in its schedule (step() below).
  pipeline_ = dynamic_cast<PipelineParallel*>(strategy_.get());
  // Data-parallel shards: every rank's, or under a pipeline every replica's.
  const int64_t replicas = strategy_->replicas();
  sampler_ = make_sampler(o_, task_, strategy_->replica(), replicas);
  const int64_t batch_size = sampler_->options().batch_size;
  if (batch_size != o_.batch_size)
    progress_.print(str("warning: --batch-size ", o_.batch_size, " is more than the ",
                        task_.train_items(), " training items fill without repeating one in a ",
                        replicas > 1 ? "global batch" : "batch", ": batches of ", batch_size,
                        " per process instead"));
  const int64_t batches_per_epoch = sampler_->batches_per_epoch();
  steps_per_epoch_ = (batches_per_epoch + o_.accum_steps - 1) / o_.accum_steps;
  total_steps_ = o_.max_steps > 0 ? o_.max_steps : steps_per_epoch_ * o_.epochs;
  epochs_ = (total_steps_ + steps_per_epoch_ - 1) / steps_per_epoch_;
  // The global batch: every shard's micro-batches of one optimizer step.
  const double peak_lr = scale_lr(o_.lr, batch_size * o_.accum_steps * replicas, o_.reference_batch,
                                  o_.lr_scaling.value());
  schedule_in_steps_ = o_.schedule_unit == ScheduleUnit::steps;
  schedule_ =
      make_schedule(o_, peak_lr, schedule_in_steps_ ? double(total_steps_) : double(epochs_));
  // Over the parameters this rank holds (a pipeline stage's alone), numbered as in one
  // process so that checkpoints map onto them.
  optimizer_ = make_optimizer(o_, model_, peak_lr, strategy_->ownership());
  parameters_ = strategy_->parameters();
  if (!o_.checkpoint_dir.empty() && is_main())
    checkpoints_ = std::make_unique<CheckpointManager>(o_.checkpoint_dir, o_.keep_checkpoints,
                                                       task_.lower_is_better() ? "min" : "max");

  const TrainPosition start = resume();
  step_ = first_step_ = start.step;
  position_ = start;
  // After the weights are final (moved, cast, resumed): every rank starts from rank 0's.
  strategy_->start();
  if (const std::string line = strategy_->describe(batch_size); !line.empty())
    progress_.print(line);
  schedule_->apply(*optimizer_, schedule_position(step_));

  announce(batch_size, replicas, peak_lr);
  for (int64_t epoch = start.epoch; epoch < epochs_ && !finished() && !result_.stopped_bad;
       ++epoch) {
    train_epoch(epoch, epoch == start.epoch ? start.batch : 0);
    if (result_.stopped_bad || stop_requested_) break;
    const bool last_epoch = epoch + 1 == epochs_ || step_ >= total_steps_;
    std::optional<double> metric;
    if (task_.has_split("val") && ((epoch + 1) % o_.eval_every == 0 || last_epoch)) {
      result_.last_val = evaluate("val", epoch);
      metric = result_.last_val.metrics.at(task_.best_metric());
    }
    save_checkpoint(position_, metric);
  }
  // Every rank's model whole, for whoever uses it next (the trainer command has none).
  if (o_.gather_model) strategy_->ownership().gather_model();
  progress_.finish();
  // Nobody reads a checkpoint before rank 0 has finished writing it (a resume may follow).
  if (group_) group_->barrier()->synchronize();
  result_.steps = step_;
  if (!result_.stopped_bad && !stop_requested_ && task_.has_split("test"))
    result_.test = evaluate("test", epochs_ - 1);
  write_range_report();
  StopSignals::reset();  // taken: the next run in this process starts with none
  return result_;
}

void TrainingRun::train_epoch(int64_t epoch, int64_t first_batch) {
  const auto batches = sampler_->epoch_batches(epoch);
  const size_t count = batches.size();
  loader_.start(batches, epoch, first_batch);
  stager_.clear();
  for (size_t index = size_t(first_batch); index < count && !finished();) {
    if (step_ + 1 == profile_first_) start_profiling();
    SONATA_NVTX_RANGE("sonata::step");
    step(index, count);
    after_step(epoch, index, count);
    if (step_ == profile_last_) stop_profiling();
    if (result_.stopped_bad) break;
  }
}

// One optimizer step, top to bottom: each micro-batch's forward, loss and backward, the
// gradients ready, the update. The strategy is called at its named points.
void TrainingRun::step(size_t& index, size_t count) {
  // accum_steps micro-batches (fewer at the end of an epoch), each loss scaled by 1/micro.
  const size_t micro = std::min<size_t>(size_t(o_.accum_steps), count - index);
  if (pipeline_) {
    // Through the stages in the pipeline's schedule; its last stage returns the losses and
    // counts the replica's items (each item once over the world).
    std::vector<HostBatch> batches;
    for (size_t m = 0; m < micro; ++m) batches.push_back(next_batch(index++, count));
    const std::vector<Tensor> losses = pipeline_->step(batches, device_, scaler_.get()).losses;
    for (size_t m = 0; m < losses.size(); ++m) {
      track_loss(losses[m]);
      items_since_log_ += batches[m].items;
    }
  } else {
    for (size_t m = 0; m < micro; ++m) {
      const HostBatch batch = next_batch(index++, count);
      strategy_->before_micro_batch(m, micro);
      Tensor loss;
      // Out of memory in the forward or backward pass names the batch's clips (one overlong
      // clip is the usual cause).
      with_batch_named(batch, [&] {
        loss = batch_loss(task_, batch, device_);
        SONATA_NVTX_RANGE("sonata::step::backward");
        scaler_->scale(loss * (1.0 / double(micro))).backward();
      });
      strategy_->after_micro_batch();
      track_loss(loss.detach());
      items_since_log_ += batch.items;
    }
  }

  // Gradients ready: reduced over the ranks that share them, unscaled, the overflow agreed
  // and the norm clipped; the update skipped if any was not finite.
  strategy_->reduce_gradients();
  SONATA_NVTX_RANGE("sonata::step::optimizer");
  scaler_->unscale_(parameters_);
  norm_ = strategy_->agree_and_clip(*scaler_, parameters_, o_.grad_clip);
  optimizer_->step(scaler_->step_scaling(parameters_));
  scaler_->update();
  optimizer_->zero_grad();
  ++step_;
  schedule_->apply(*optimizer_, schedule_position(step_));
}

HostBatch TrainingRun::next_batch(size_t index, size_t count) {
  SONATA_NVTX_RANGE("sonata::step::data_wait");
  const Clock::time_point wait_start = Clock::now();
  if (!stager_.staged()) {
    std::optional<HostBatch> fetched = loader_.next();
    SONATA_CHECK(fetched, "the loader ended before batch ", index, " of ", count);
    stager_.stage(std::move(*fetched));
  }
  HostBatch batch = stager_.take();
  frames_since_log_ += batch.frames;
  padded_frames_since_log_ += batch.padded_frames;
  // On a GPU the next batch's copy runs on the copy stream during this step. (On the CPU,
  // fetching it now would only wait for the workers before computing.)
  if (device_.is_cuda() && index + 1 < count)
    if (std::optional<HostBatch> upcoming = loader_.next()) stager_.stage(std::move(*upcoming));
  wait_since_log_ += seconds_since(wait_start);
  return batch;
}

// Per micro-batch, on the device: the loss summed for the log, and the run of consecutive
// non-finite losses (x - x is 0 exactly for finite x).
void TrainingRun::track_loss(const Tensor& loss) {
  const Tensor value = cast(loss, DType::f32);
  loss_sum_ = loss_sum_.defined() ? loss_sum_ + value : value;
  ++losses_summed_;
  const Tensor bad = cast(ne(value - value, zeros_like(value)), DType::f32);
  bad_streak_ = bad_streak_.defined() ? (bad_streak_ + 1.0) * bad : bad;
  worst_bad_streak_ =
      worst_bad_streak_.defined() ? maximum(worst_bad_streak_, bad_streak_) : bad_streak_;
}

// After a step: the log point, and a checkpoint or a stop when one is due.
void TrainingRun::after_step(int64_t epoch, size_t next_batch, size_t epoch_batches) {
  const int64_t step_in_epoch = (int64_t(next_batch) + o_.accum_steps - 1) / o_.accum_steps;
  const bool epoch_end = next_batch == epoch_batches;
  if (step_ % o_.log_every == 0 || step_ == total_steps_ || epoch_end)
    log_point(epoch, step_in_epoch);
  if (result_.stopped_bad) return;
  const TrainPosition position = epoch_end ? TrainPosition{step_, epoch + 1, 0}
                                           : TrainPosition{step_, epoch, int64_t(next_batch)};
  position_ = position;
  if (o_.stop_after > 0 && step_ >= o_.stop_after && step_ < total_steps_) {
    save_checkpoint(position, std::nullopt);
    progress_.print(str("stopped after step ", step_, " (--stop-after); continue with --resume"));
    stop_requested_ = true;
  } else if (o_.checkpoint_every > 0 && step_ % o_.checkpoint_every == 0 && !epoch_end) {
    save_checkpoint(position, std::nullopt);
  }
  if (!stop_requested_ && step_ < total_steps_) stop_if_signalled(position);
}

void TrainingRun::stop_if_signalled(const TrainPosition& position) {
  const int here = StopSignals::received();
  bool anywhere = here != 0;
  if (group_) {
    Tensor count =
        full({1}, here != 0 ? 1.0 : 0.0, TensorOptions{}.with(DType::f64)).to(group_->device());
    group_->all_reduce(count, ReduceOp::sum)->synchronize();
    anywhere = count.to(Device::cpu()).item() > 0;
  }
  if (!anywhere) return;
  save_checkpoint(position, std::nullopt);
  stop_requested_ = true;
  result_.stopped_by_signal = here != 0 ? here : -1;
  const std::string cause =
      here != 0 ? str(stop_signal_name(here)) : std::string("a stop signal to another rank");
  const std::string saved =
      o_.checkpoint_dir.empty()
          ? std::string("no --checkpoint-dir, so nothing was saved")
          : str("its checkpoint is ",
                result_.last_checkpoint.empty() ? o_.checkpoint_dir : result_.last_checkpoint,
                "; continue with --resume auto");
  progress_.notice(str("stopped by ", cause, " after step ", step_, ": ", saved));
  metrics_.write({{"event", "stop"}, {"step", step_}, {"signal", cause}});
}

double TrainingRun::schedule_position(int64_t step) const {
  return schedule_in_steps_ ? double(step) : epoch_position(step, steps_per_epoch_);
}

TrainResult TrainingRun::evaluate_only() {
  strategy_ = std::make_unique<SingleProcessStrategy>(task_, group_);
  progress_.print(str("evaluating on ", device_.str(), ": ", task_.describe()));
  say_where_metrics_go();
  if (!metrics_.unwritable().empty())
    progress_.notice(str("--eval-only: cannot write the metrics log ", metrics_path_, " (",
                         metrics_.unwritable(),
                         "); the results are printed only (--metrics FILE keeps them)"));
  report_data();
  if (!o_.resume.empty()) load_weights_to_evaluate();
  if (task_.has_split("val")) result_.last_val = evaluate("val", -1);
  if (task_.has_split("test")) result_.test = evaluate("test", -1);
  write_range_report();
  return result_;
}

}  // namespace sonata

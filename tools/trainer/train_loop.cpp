#include "tools/trainer/train_loop.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <numeric>
#include <optional>
#include <tuple>

#include "base/error.h"
#include "base/nvtx.h"
#include "data/loader/device_stager.h"
#include "engine/allocator.h"
#include "engine/autograd/grad_mode.h"
#include "engine/nn/state_dict.h"
#include "engine/ops.h"
#include "engine/optim/adamw.h"
#include "engine/optim/lr_schedule.h"
#include "engine/optim/param_groups.h"
#include "engine/optim/sgd.h"
#include "kernels/cpu/capability.h"
#include "tools/trainer/checkpoint_dir_lock.h"
#include "tools/trainer/init_from.h"
#include "tools/trainer/metric_text.h"
#include "tools/trainer/metrics_log.h"
#include "tools/trainer/precision.h"
#include "tools/trainer/progress.h"
#include "tools/trainer/range_report.h"
#include "tools/trainer/sampler_choice.h"
#include "tools/trainer/strategy/single_process_strategy.h"
#include "tools/trainer/training_state.h"

namespace sonata {
namespace {

using Clock = std::chrono::steady_clock;

// The checkpoint scalar of the run's steps per epoch (check_epoch_length).
constexpr const char* kStepsPerEpoch = "steps_per_epoch";

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::unique_ptr<Optimizer> make_optimizer(const TrainerOptions& o, Module& model, double lr,
                                          const TrainingStrategy& strategy) {
  std::vector<ParamGroup> groups =
      o.decay_norm_and_bias ? std::vector<ParamGroup>{ParamGroup{
                                  model.parameters(), {{"weight_decay", o.weight_decay}}}}
                            : weight_decay_groups(model, o.weight_decay);
  groups = strategy.optimizer_groups(std::move(groups));  // a pipeline stage's only
  if (o.optimizer == "sgd")
    return std::make_unique<SGD>(std::move(groups), SgdOptions{.lr = lr,
                                                               .momentum = o.momentum,
                                                               .weight_decay = o.weight_decay,
                                                               .nesterov = o.nesterov});
  const AdamOptions adam{
      .lr = lr, .beta1 = o.beta1, .beta2 = o.beta2, .eps = o.eps, .weight_decay = o.weight_decay};
  if (o.optimizer == "adam") return std::make_unique<Adam>(std::move(groups), adam);
  return std::make_unique<AdamW>(std::move(groups), adam);
}

// Warmup, then the main phase, then the flat tail, over `length` schedule units.
LrSchedule make_schedule(const TrainerOptions& o, double peak_lr, double length) {
  LrSchedule schedule(peak_lr);
  if (o.warmup > 0) schedule.warmup(o.warmup, o.warmup_start_lr);
  const double main = length - o.warmup - o.flat_tail;
  SONATA_CHECK(main > 0, "--warmup ", o.warmup, " and --flat-tail ", o.flat_tail,
               " leave nothing of the ", length, " ", o.schedule_unit,
               " of training: shorten them to fit (e.g. --warmup ", length / 10,
               " --flat-tail 0, a tenth of the run warming up) or train longer");
  if (o.schedule == "cosine") schedule.cosine(main, o.min_lr);
  if (o.schedule == "linear") schedule.linear(main, o.min_lr);
  if (o.schedule == "step") schedule.step_decay(main, o.step_every, o.step_gamma);
  if (o.schedule == "constant") schedule.constant(main);
  if (o.flat_tail > 0) schedule.constant(o.flat_tail);
  return schedule;
}

// One run: the state the step loop carries, and its phases as methods.
class Run {
 public:
  Run(const TrainerOptions& options, Task& task, Device device,
      std::shared_ptr<ProcessGroup> group);
  TrainResult train();
  TrainResult evaluate_only();

 private:
  double schedule_position(int64_t step) const;
  // A checkpoint's step count counts its run's batches: a resume whose epochs have another
  // number of steps (other training items, batch size, accumulation or process count) would
  // put that step elsewhere in its epoch and schedule, and is refused.
  void check_epoch_length(const TrainingState& checkpoint, int64_t step) const;
  void train_epoch(int64_t epoch, int64_t first_batch);
  // The batch `index` of `count` in this epoch, from the stager or the loader (timed as the
  // data wait); on a GPU the next batch's copy starts behind it.
  HostBatch next_batch(size_t index, size_t count);
  // What the strategy calls back into for each micro-batch's loss.
  LossHooks loss_hooks();
  void track_loss(const Tensor& loss);
  void optimizer_step(int64_t epoch, size_t next_batch, size_t epoch_batches);
  void log_point(int64_t epoch, int64_t step_in_epoch);
  // What loading the data found (skipped inputs, warnings): printed, and one "data" record.
  void report_data();
  EvalResult evaluate(const std::string& split, int64_t epoch);
  void write_range_report();  // --range-times
  // Without --checkpoint-dir or --metrics the log lands in the current folder: said, once.
  void say_where_metrics_go();
  void save_checkpoint(const TrainPosition& position, std::optional<double> metric);
  bool finished() const { return step_ >= total_steps_ || stop_requested_; }
  // --profile-steps: the CUDA profiler's capture around steps [profile_first_, profile_last_].
  void start_profiling();
  void stop_profiling();
  bool is_main() const { return rank_ == 0; }

  const TrainerOptions& o_;
  Task& task_;
  Device device_;
  std::shared_ptr<ProcessGroup> group_;  // null in one process
  int64_t rank_ = 0, world_ = 1;
  // One run per --checkpoint-dir, held by the rank that writes there; taken before the
  // metrics log below opens (and, on a fresh run, empties) the folder's metrics.jsonl.
  std::unique_ptr<CheckpointDirLock> checkpoint_dir_lock_;
  // How a step spreads over the processes (make_training_strategy); under --eval-only, ranks
  // that evaluate their shards alone.
  std::unique_ptr<TrainingStrategy> strategy_;
  Module& model_;
  std::string metrics_path_;
  MetricsLog metrics_;
  Progress progress_;
  BatchLoader loader_;
  DeviceStager stager_;  // the model input of the next batch, copied while a step computes
  Clock::time_point run_start_ = Clock::now();

  std::unique_ptr<BatchSampler> sampler_;
  int64_t steps_per_epoch_ = 0, total_steps_ = 0, epochs_ = 0;
  bool schedule_in_steps_ = false;
  std::optional<LrSchedule> schedule_;
  std::unique_ptr<Optimizer> optimizer_;
  std::unique_ptr<LossScaler> scaler_;
  std::unique_ptr<CheckpointManager> checkpoints_;
  std::vector<Tensor> parameters_;

  int64_t step_ = 0, first_step_ = 0;  // first_step_: where this run started (resumes)
  // Where the next batch is: after the last step taken (an epoch cut short by --max-steps
  // ends mid-epoch, and its checkpoint must say so for a longer run to continue there).
  TrainPosition position_;
  int64_t last_saved_step_ = -1;
  bool stop_requested_ = false;
  int64_t profile_first_ = 0, profile_last_ = 0;
  bool profiling_ = false;
  TrainResult result_;

  // Between log points: sums on the device, read by the host only there.
  Tensor loss_sum_, norm_, bad_streak_, worst_bad_streak_;
  int64_t losses_summed_ = 0, items_since_log_ = 0;
  // Time steps of ragged inputs since the last log: the items' own, and those computed.
  int64_t frames_since_log_ = 0, padded_frames_since_log_ = 0;
  double wait_since_log_ = 0;
  Clock::time_point log_start_ = Clock::now();
};

Run::Run(const TrainerOptions& o, Task& task, Device device, std::shared_ptr<ProcessGroup> group)
    : o_(o),
      task_(task),
      device_(device),
      group_(group && group->world_size() > 1 ? std::move(group) : nullptr),
      rank_(group_ ? group_->rank() : 0),
      world_(group_ ? group_->world_size() : 1),
      checkpoint_dir_lock_(rank_ == 0 && !o.eval_only && !o.checkpoint_dir.empty()
                               ? std::make_unique<CheckpointDirLock>(o.checkpoint_dir)
                               : nullptr),
      model_(task.model()),
      metrics_path_(!o.metrics.empty()          ? o.metrics
                    : !o.checkpoint_dir.empty() ? o.checkpoint_dir + "/metrics.jsonl"
                                                : std::string("metrics.jsonl")),
      metrics_(rank_ == 0 ? MetricsLog(metrics_path_, !o.resume.empty()) : MetricsLog()),
      // Off a terminal, about four lines an epoch (at log points).
      progress_(rank_ == 0 ? o.progress : "none",
                std::max<int64_t>(
                    1, task.train_items() / o.batch_size / o.accum_steps / 4 / o.log_every) *
                    o.log_every),
      // Two batches ahead per worker: enough to hide a slow one behind the step.
      loader_([&task](const std::vector<int64_t>& items,
                      int64_t epoch) { return task.prepare(items, epoch); },
              o.workers, 2 * o.workers, /*pin_for=*/device),
      stager_(device) {
  if (!o.init_from.empty()) progress_.print(init_from_weights(model_, o.init_from));
  // Before any split: the pipeline's, SyncBatchNorm's and the reducer's groups inherit it.
  if (group_ && o.comm_timeout > 0) group_->set_timeout(o.comm_timeout);
  model_.to(device);
  cast_for_precision(model_, compute_dtype(o.precision));
  model_.train();
  std::tie(profile_first_, profile_last_) = o.profile_range();
  if (!o.range_times.empty()) range_times_enable(true);
}

TrainResult Run::evaluate_only() {
  strategy_ = std::make_unique<SingleProcessStrategy>(task_, device_, loss_hooks(), group_);
  progress_.print(str("evaluating on ", device_.str(), ": ", task_.describe()));
  say_where_metrics_go();
  report_data();
  if (!o_.resume.empty()) {
    const std::string path = resume_path(o_);
    SONATA_CHECK(!path.empty(), "--eval-only --resume auto: no checkpoint in ", o_.checkpoint_dir);
    CheckpointSource source;
    const TrainingState state = load_resume_checkpoint(path, o_, &source);
    std::map<std::string, std::string> expected = task_.checkpoint_texts();
    expected["model"] = o_.model;
    check_compatible(state, model_.state_dict(), expected);
    load_state_dict(model_, state.model);
    progress_.print(str("weights of ", source.folder));
  }
  if (task_.has_split("val")) result_.last_val = evaluate("val", -1);
  if (task_.has_split("test")) result_.test = evaluate("test", -1);
  write_range_report();
  return result_;
}

TrainResult Run::train() {
  // fp16 scales the loss (GradScaler); fp32 and bf16 keep the scaler's inf/nan check at a
  // fixed scale of 1, so a non-finite gradient skips the step instead of poisoning weights.
  LossScalerOptions scaling;
  if (o_.precision != "fp16") {
    scaling.init_scale = 1.0;
    scaling.growth_factor = 1.0;
    scaling.backoff_factor = 1.0;
  }
  scaler_ = std::make_unique<LossScaler>(device_, scaling);
  strategy_ = make_training_strategy(o_, task_, group_, device_, loss_hooks());
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
                                  parse_lr_scaling_rule(o_.lr_scaling));
  schedule_in_steps_ = o_.schedule_unit == "steps";
  schedule_ =
      make_schedule(o_, peak_lr, schedule_in_steps_ ? double(total_steps_) : double(epochs_));
  // Under a pipeline the optimizer holds this stage's parameters (the strategy maps its state
  // to one process's numbering and back).
  optimizer_ = make_optimizer(o_, model_, peak_lr, *strategy_);
  parameters_ = strategy_->parameters();
  if (!o_.checkpoint_dir.empty() && is_main())
    checkpoints_ = std::make_unique<CheckpointManager>(o_.checkpoint_dir, o_.keep_checkpoints,
                                                       task_.lower_is_better() ? "min" : "max");

  TrainPosition start;
  if (!o_.resume.empty()) {
    const std::string path = resume_path(o_);
    CheckpointSource source;
    if (path.empty()) {
      progress_.print(str("--resume auto: no checkpoint in ", o_.checkpoint_dir, " yet; starting"));
    } else {
      std::vector<std::string> notes;
      // Under a pipeline each rank reads its stage's tensors alone.
      const std::optional<CheckpointSelection> selection = strategy_->checkpoint_selection();
      PartialTrainingState loaded =
          selection ? load_resume_checkpoint_part(path, o_, *selection, &source)
                    : PartialTrainingState{load_resume_checkpoint(path, o_, &source), {}};
      strategy_->take_model_pieces(loaded.state.model);
      loaded.state.optimizer = strategy_->local_optimizer_state(std::move(loaded.state.optimizer));
      start = restore_training_state(loaded.state, o_, task_, *optimizer_, *scaler_, &notes,
                                     selection ? &loaded.model_in_file : nullptr);
      check_epoch_length(loaded.state, start.step);
      progress_.print(str("resumed from ", source.folder, " at step ", start.step, " (epoch ",
                          start.epoch + 1, ", batch ", start.batch, ")"));
      for (const std::string& skipped : source.skipped)
        progress_.print(str("  skipped a newer checkpoint, kept as it is: ", skipped));
      for (const std::string& note : notes) progress_.print(note);
      last_saved_step_ = start.step;
    }
    // What the interrupted run logged past this step is done again: dropped, so that the
    // log reads as one run.
    metrics_.drop_after_step(start.step);
    if (!path.empty())
      metrics_.write({{"event", "resume"},
                      {"step", start.step},
                      {"checkpoint", source.folder},
                      {"skipped", source.skipped}});
  }
  step_ = first_step_ = start.step;
  position_ = start;
  // After the weights are final (moved, cast, resumed): every rank starts from rank 0's.
  strategy_->start();
  if (const std::string line = strategy_->describe(batch_size); !line.empty())
    progress_.print(line);
  schedule_->apply(*optimizer_, schedule_position(step_));

  // The CPU kernels' instruction set (kernels/cpu/capability.h): "training on cpu (avx2): ...".
  progress_.print(str("training on ", device_.str(),
                      device_.is_cpu() ? str(" (", kernels::cpu::capability_name(), ")") : "", ": ",
                      task_.describe()));
  report_data();
  progress_.print(str(total_steps_, " steps (", epochs_, " epochs of ", steps_per_epoch_,
                      "), batch ", batch_size, " x ", o_.accum_steps, " accumulated x ", replicas,
                      " ", strategy_->shard_name(), ", peak lr ", peak_lr, ", metrics in ",
                      metrics_path_));
  say_where_metrics_go();
  if (!o_.resume.empty() && step_ >= total_steps_)
    progress_.print(
        str("the run is already complete: its checkpoint is at step ", step_,
            " and this run ends at ", "step ", total_steps_,
            o_.max_steps > 0 ? str(" (--max-steps ", o_.max_steps, ")")
                             : str(" (--epochs ", o_.epochs, ")"),
            "; nothing to train. To train further, resume with a larger --epochs or --max-steps"));
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
  strategy_->after_training();
  progress_.finish();
  // Nobody reads a checkpoint before rank 0 has finished writing it (a resume may follow).
  if (group_) group_->barrier()->synchronize();
  result_.steps = step_;
  if (!result_.stopped_bad && !stop_requested_ && task_.has_split("test"))
    result_.test = evaluate("test", epochs_ - 1);
  write_range_report();
  return result_;
}

void Run::say_where_metrics_go() {
  if (!o_.checkpoint_dir.empty() || !o_.metrics.empty()) return;
  std::error_code error;
  const std::filesystem::path path = std::filesystem::absolute(metrics_path_, error);
  progress_.print(str("no --checkpoint-dir: no checkpoints are written, and the metrics go to ",
                      error ? metrics_path_ : path.string(), " (--metrics FILE to choose)"));
}

void Run::write_range_report() {
  if (o_.range_times.empty()) return;
  range_times_enable(false);
  const std::string path = world_ > 1 ? str(o_.range_times, ".rank", rank_) : o_.range_times;
  write_range_times(path, seconds_since(run_start_));
  progress_.print(str("host time per range in ", path));
}

void Run::check_epoch_length(const TrainingState& checkpoint, int64_t step) const {
  const auto saved = checkpoint.scalars.find(kStepsPerEpoch);
  if (saved == checkpoint.scalars.end()) return;  // written before the count was kept
  const int64_t theirs = int64_t(saved->second);
  if (theirs == steps_per_epoch_) return;
  throw Error(str("this run's epochs have ", steps_per_epoch_,
                  " steps, the checkpoint's run's had ", theirs,
                  " (its training items, --batch-size, --accum-steps or number of ",
                  "processes differ): its step ", step,
                  " would fall elsewhere in an epoch and in the schedule; resume with the same "
                  "data and batch layout, or start a new run from its weights with --init-from "
                  "<checkpoint folder>/model.safetensors"));
}

double Run::schedule_position(int64_t step) const {
  return schedule_in_steps_ ? double(step) : epoch_position(step, steps_per_epoch_);
}

void Run::train_epoch(int64_t epoch, int64_t first_batch) {
  const auto batches = sampler_->epoch_batches(epoch);
  const size_t count = batches.size();
  loader_.start(batches, epoch, first_batch);
  stager_.clear();
  for (size_t index = size_t(first_batch); index < count && !finished();) {
    if (step_ + 1 == profile_first_) start_profiling();
    SONATA_NVTX_RANGE("sonata::step");
    // One optimizer step over accum_steps micro-batches (fewer at the end of an epoch).
    const size_t micro = std::min<size_t>(size_t(o_.accum_steps), count - index);
    items_since_log_ += strategy_->step(micro, [&] { return next_batch(index++, count); });
    optimizer_step(epoch, index, count);
    if (step_ == profile_last_) stop_profiling();
    if (result_.stopped_bad) break;
  }
}

HostBatch Run::next_batch(size_t index, size_t count) {
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

LossHooks Run::loss_hooks() {
  return {.track = [this](const Tensor& loss) { track_loss(loss); },
          .scale = [this](const Tensor& loss) { return scaler_->scale(loss); }};
}

void Run::start_profiling() {
  profiling_ = profiler_capture_start();
  progress_.print(profiling_ ? str("profiling steps ", profile_first_, " to ", profile_last_,
                                   " (cudaProfilerStart)")
                             : str("--profile-steps: no CUDA profiler capture in this run (",
                                   device_.is_cuda() ? "the call failed" : "not on a GPU",
                                   "); NVTX ranges still mark every step"));
}

void Run::stop_profiling() {
  if (!profiling_) return;
  device_synchronize(device_);  // the captured steps' kernels finish inside the capture
  profiler_capture_stop();
  profiling_ = false;
}

// Per micro-batch, on the device: the loss summed for the log, and the run of consecutive
// non-finite losses (x - x is 0 exactly for finite x).
void Run::track_loss(const Tensor& loss) {
  const Tensor value = cast(loss, DType::f32);
  loss_sum_ = loss_sum_.defined() ? loss_sum_ + value : value;
  ++losses_summed_;
  const Tensor bad = cast(ne(value - value, zeros_like(value)), DType::f32);
  bad_streak_ = bad_streak_.defined() ? (bad_streak_ + 1.0) * bad : bad;
  worst_bad_streak_ =
      worst_bad_streak_.defined() ? maximum(worst_bad_streak_, bad_streak_) : bad_streak_;
}

void Run::optimizer_step(int64_t epoch, size_t next_batch, size_t epoch_batches) {
  SONATA_NVTX_RANGE("sonata::step::optimizer");
  scaler_->unscale_(parameters_);
  norm_ = strategy_->agree_and_clip(*scaler_, parameters_, o_.grad_clip);
  optimizer_->step(scaler_->step_scaling(parameters_));
  scaler_->update();
  optimizer_->zero_grad();
  ++step_;
  schedule_->apply(*optimizer_, schedule_position(step_));

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
}

void Run::log_point(int64_t epoch, int64_t step_in_epoch) {
  // Totals over the ranks: loss sums and counts, items, and the worst non-finite streak
  // (as a count of ranks past the limit, so every rank stops together).
  // (Under a pipeline only the last stages compute losses.)
  const int64_t worst_here =
      worst_bad_streak_.defined() ? int64_t(worst_bad_streak_.item()) : int64_t(0);
  const std::vector<double> totals = strategy_->sum_over_ranks(
      {loss_sum_.defined() ? loss_sum_.item() : 0.0, double(losses_summed_),
       double(items_since_log_), double(worst_here >= o_.max_bad_steps), double(worst_here),
       double(frames_since_log_), double(padded_frames_since_log_)});
  const double loss = totals[0] / std::max(totals[1], 1.0);
  const double elapsed = std::max(seconds_since(log_start_), 1e-9);
  const double rate = totals[2] / elapsed;
  const double wait_share = wait_since_log_ / elapsed;
  const double lr = optimizer_->lr(0);
  const double scale = scaler_->scale_value();
  nlohmann::ordered_json record{{"event", "train"},
                                {"epoch", epoch},
                                {"step", step_},
                                {"loss", loss},
                                {"lr", lr},
                                {"grad_norm", norm_.item()},
                                {"loss_scale", scale},
                                {"items_per_s", rate},
                                {"data_wait", wait_share},
                                {"elapsed_s", seconds_since(run_start_)}};
  // The share of the input's time steps that are padding (ragged inputs only): work the
  // length buckets did not save.
  if (totals[6] > 0) record["padding_share"] = 1.0 - totals[5] / totals[6];
  const MemoryStats memory =
      device_.is_cuda() ? cuda_memory_stats(device_.index) : cpu_memory_stats();
  record["memory_bytes"] = memory.allocated_bytes;
  record["peak_memory_bytes"] = memory.peak_allocated_bytes;
  metrics_.write(record);
  const double run_seconds = seconds_since(run_start_);
  progress_.update(
      {.epoch = epoch,
       .epochs = epochs_,
       .step_in_epoch = step_in_epoch,
       .steps_in_epoch = steps_per_epoch_,
       .step = step_,
       .total_steps = total_steps_,
       .loss = loss,
       .lr = lr,
       .items_per_second = rate,
       .item_name = task_.item_name(),
       .data_wait_share = wait_share,
       .eta_seconds = run_seconds / double(step_ - first_step_) * double(total_steps_ - step_)});
  const int64_t worst = int64_t(totals[4]);
  if (totals[3] > 0) {
    progress_.finish();
    progress_.print(str(
        "training stopped: the loss was not finite for ", worst,
        " consecutive steps (--max-bad-steps ", o_.max_bad_steps, ") at step ", step_, "; ",
        result_.last_checkpoint.empty() ? std::string("no checkpoint was written")
                                        : "the last good checkpoint is " + result_.last_checkpoint,
        ". Try a lower --lr, --grad-clip, or --precision fp32."));
    metrics_.write({{"event", "stopped"}, {"step", step_}, {"reason", "non-finite loss"}});
    result_.stopped_bad = true;
  }
  loss_sum_ = Tensor();
  worst_bad_streak_ = bad_streak_;
  losses_summed_ = 0;
  items_since_log_ = 0;
  wait_since_log_ = 0;
  frames_since_log_ = padded_frames_since_log_ = 0;
  log_start_ = Clock::now();
}

void Run::report_data() {
  const DataReport report = task_.data_report();
  for (const std::string& line : report.lines) progress_.print(line);
  nlohmann::ordered_json record{{"event", "data"}, {"step", step_}};
  for (const auto& [name, count] : report.counts) record[name] = count;
  metrics_.write(record);
}

EvalResult Run::evaluate(const std::string& split, int64_t epoch) {
  SONATA_NVTX_RANGE("sonata::eval");
  EvalCounts counts = strategy_->evaluate(task_, split, device_, rank_, world_);
  // Every rank has the same names, in the map's order.
  std::vector<double> values;
  for (const auto& [name, value] : counts.sums) values.push_back(value);
  values = strategy_->sum_over_ranks(values);
  size_t i = 0;
  for (auto& [name, value] : counts.sums) value = values[i++];
  EvalResult eval = task_.summarize(counts);
  nlohmann::ordered_json record{
      {"event", "eval"}, {"split", split}, {"epoch", epoch}, {"step", step_}};
  for (const auto& [name, value] : eval.metrics) record[name] = value;
  record["elapsed_s"] = seconds_since(run_start_);
  metrics_.write(record);
  if (epoch >= 0)
    progress_.print(str("epoch ", epoch + 1, " ", split, ": ", metrics_text(eval.metrics), "  (",
                        format_duration(seconds_since(run_start_)), " elapsed)"));
  return eval;
}

void Run::save_checkpoint(const TrainPosition& position, std::optional<double> metric) {
  if (o_.checkpoint_dir.empty() || last_saved_step_ == position.step) return;
  SONATA_NVTX_RANGE("sonata::checkpoint");
  // Only good checkpoints: none while the loss is non-finite (the weights are then those of
  // the last good step anyway, and resuming into the NaN run would help no one). Where
  // every rank takes part in saving, they decide alike.
  const bool bad_here = bad_streak_.defined() && bad_streak_.item() > 0;
  if (strategy_->bad_anywhere(bad_here)) return;
  if (!strategy_->saves_on_every_rank() && !checkpoints_) return;
  last_saved_step_ = position.step;
  TrainingState state = capture_training_state(o_, task_, *optimizer_, *scaler_, position);
  state.scalars[kStepsPerEpoch] = double(steps_per_epoch_);
  const std::string path =
      strategy_->save_checkpoint(checkpoints_.get(), state, position.step, metric);
  if (!checkpoints_) return;
  result_.last_checkpoint = path;
  metrics_.write(
      {{"event", "checkpoint"}, {"step", position.step}, {"path", result_.last_checkpoint}});
}

}  // namespace

TrainResult run_training(const TrainerOptions& options, Task& task, Device device,
                         std::shared_ptr<ProcessGroup> group) {
  Run run(options, task, device, std::move(group));
  return options.eval_only ? run.evaluate_only() : run.train();
}

}  // namespace sonata

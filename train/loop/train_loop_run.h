#pragma once
// One run of run_training (train_loop.h): the state the step loop carries, and its phases as
// methods. Only the train_loop*.cpp files include this. The loop itself, top to bottom, is
// train_loop.cpp; beside it train_loop_checkpoints.cpp (resume and save),
// train_loop_log.cpp (log points, evaluations, what the run prints) and
// train_loop_profile.cpp (--profile-steps, --range-times).
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "comm/process_group.h"
#include "data/loader/batch_loader.h"
#include "data/loader/device_stager.h"
#include "data/sampling/batch_sampler.h"
#include "engine/amp/loss_scaler.h"
#include "engine/checkpoint/checkpoint.h"
#include "engine/device.h"
#include "engine/optim/lr_schedule.h"
#include "engine/optim/optimizer.h"
#include "train/loop/metrics_log.h"
#include "train/loop/progress.h"
#include "train/loop/stop_signals.h"
#include "train/state/checkpoint_dir_lock.h"
#include "train/state/training_state.h"
#include "train/strategy/training_strategy.h"
#include "train/train_loop.h"

namespace sonata {

class PipelineParallel;

class TrainingRun {
 public:
  using Clock = std::chrono::steady_clock;

  TrainingRun(const TrainerOptions& options, Task& task, Device device,
              std::shared_ptr<ProcessGroup> group);
  TrainResult train();
  TrainResult evaluate_only();

 private:
  // The checkpoint scalar of the run's steps per epoch (check_epoch_length).
  static constexpr const char* kStepsPerEpoch = "steps_per_epoch";
  static double seconds_since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
  }

  // The loop (train_loop.cpp).
  double schedule_position(int64_t step) const;
  void train_epoch(int64_t epoch, int64_t first_batch);
  // One optimizer step from the epoch's batch `index` (advanced past the batches it takes)
  // of `count`: forwards, backwards, the update.
  void step(size_t& index, size_t count);
  // The batch `index` of `count` in this epoch, from the stager or the loader (timed as the
  // data wait); on a GPU the next batch's copy starts behind it.
  HostBatch next_batch(size_t index, size_t count);
  void track_loss(const Tensor& loss);
  void after_step(int64_t epoch, size_t next_batch, size_t epoch_batches);
  bool finished() const { return step_ >= total_steps_ || stop_requested_; }
  // After a step: whether any rank received a stop signal (a collective under a group, so
  // that every rank stops after the same step), and if so the checkpoint and the notice.
  void stop_if_signalled(const TrainPosition& position);
  bool is_main() const { return rank_ == 0; }

  // Checkpoints (train_loop_checkpoints.cpp). --resume: the checkpoint's state loaded into
  // the model, optimizer and scaler, and where to continue (step 0 without one).
  TrainPosition resume();
  // --eval-only --resume: the checkpoint's weights alone.
  void load_weights_to_evaluate();
  // A checkpoint's step count counts its run's batches: a resume whose epochs have another
  // number of steps (other training items, batch size, accumulation or process count) would
  // put that step elsewhere in its epoch and schedule, and is refused.
  void check_epoch_length(const TrainingState& checkpoint, int64_t step) const;
  void save_checkpoint(const TrainPosition& position, std::optional<double> metric);

  // What the run reports (train_loop_log.cpp).
  // The lines a training run starts with, and its "data" record.
  void announce(int64_t batch_size, int64_t replicas, double peak_lr);
  void log_point(int64_t epoch, int64_t step_in_epoch);
  // The sums since the last log point, over the ranks (a collective), for a checkpoint: a
  // resumed run's first row then averages the steps an uninterrupted run's would.
  std::map<std::string, double> log_sums_over_ranks();
  // Those of a checkpoint, taken back by rank 0 (the others start from none, as the sums
  // are over the ranks); a checkpoint written before they were kept restores none.
  void restore_log_sums(const TrainingState& checkpoint);
  // What loading the data found (skipped inputs, warnings): printed, and one "data" record.
  void report_data();
  EvalResult evaluate(const std::string& split, int64_t epoch);
  // Without --checkpoint-dir or --metrics the log lands in the current folder: said, once.
  void say_where_metrics_go();

  // Profiling (train_loop_profile.cpp). --profile-steps: the CUDA profiler's capture around
  // steps [profile_first_, profile_last_].
  void start_profiling();
  void stop_profiling();
  void write_range_report();  // --range-times

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
  // The strategy when it is a pipeline, which runs a step's forwards and backwards itself.
  PipelineParallel* pipeline_ = nullptr;
  Module& model_;
  std::string metrics_path_;
  MetricsLog metrics_;
  Progress progress_;
  BatchLoader loader_;
  DeviceStager stager_;  // the model input of the next batch, copied while a step computes
  Clock::time_point run_start_ = Clock::now();

  std::unique_ptr<BatchSampler> sampler_;
  int64_t steps_per_epoch_ = 0, total_steps_ = 0, epochs_ = 0;
  // What --train held when the run (or this resume of it) started: kept in each checkpoint
  // (train/manifest_fingerprint.h).
  std::string train_manifest_fingerprint_;
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

}  // namespace sonata

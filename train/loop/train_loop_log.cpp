// What a run reports: the lines it starts with, the log points (metrics.jsonl and the
// progress display, and the stop on a loss that stays non-finite), evaluations and the data
// report.
#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/nvtx.h"
#include "engine/allocator.h"
#include "engine/ops.h"
#include "kernels/cpu/capability.h"
#include "train/loop/metric_text.h"
#include "train/loop/train_loop_run.h"

namespace sonata {

void TrainingRun::announce(int64_t batch_size, int64_t replicas, double peak_lr) {
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
    progress_.notice(
        str("the run is already complete: its checkpoint is at step ", step_,
            " and this run ends at ", "step ", total_steps_,
            o_.max_steps > 0 ? str(" (--max-steps ", o_.max_steps, ")")
                             : str(" (--epochs ", o_.epochs, ")"),
            "; nothing to train. To train further, resume with a larger --epochs or --max-steps"));
}

namespace {

// The values of device scalars with one copy to the host (each .item() is a copy and a host
// wait); an undefined tensor reads as 0. Under a pipeline some live on the host: they join
// the device's first.
std::vector<double> read_scalars(const std::vector<Tensor>& scalars) {
  Device gather = Device::cpu();
  for (const Tensor& scalar : scalars)
    if (scalar.defined() && scalar.device().is_cuda()) {
      gather = scalar.device();
      break;
    }
  std::vector<Tensor> parts;
  for (const Tensor& scalar : scalars)
    if (scalar.defined()) parts.push_back(cast(scalar, DType::f64).to(gather).reshape({1}));
  const std::vector<double> read =
      parts.empty() ? std::vector<double>{} : cat(parts, 0).to_vector<double>();
  std::vector<double> values;
  size_t next = 0;
  for (const Tensor& scalar : scalars) values.push_back(scalar.defined() ? read[next++] : 0.0);
  return values;
}

}  // namespace

void TrainingRun::log_point(int64_t epoch, int64_t step_in_epoch) {
  // The step's device scalars in one read: the worst non-finite streak, the summed loss and
  // the gradient norm.
  const std::vector<double> device_values = read_scalars({worst_bad_streak_, loss_sum_, norm_});
  // Totals over the ranks: loss sums and counts, items, and the worst non-finite streak
  // (as a count of ranks past the limit, so every rank stops together).
  // (Under a pipeline only the last stages compute losses.)
  const int64_t worst_here = int64_t(device_values[0]);
  const std::vector<double> totals =
      strategy_->sum_over_ranks({device_values[1], double(losses_summed_), double(items_since_log_),
                                 double(worst_here >= o_.max_bad_steps), double(worst_here),
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
                                {"grad_norm", device_values[2]},
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

namespace {

// The checkpoint's scalars that hold the log's sums since its last row.
constexpr const char* kLogLossSum = "log.loss_sum";
constexpr const char* kLogLosses = "log.losses";
constexpr const char* kLogFrames = "log.frames";
constexpr const char* kLogPaddedFrames = "log.padded_frames";

}  // namespace

std::map<std::string, double> TrainingRun::log_sums_over_ranks() {
  const std::vector<double> sums =
      strategy_->sum_over_ranks({read_scalars({loss_sum_})[0], double(losses_summed_),
                                 double(frames_since_log_), double(padded_frames_since_log_)});
  return {{kLogLossSum, sums[0]},
          {kLogLosses, sums[1]},
          {kLogFrames, sums[2]},
          {kLogPaddedFrames, sums[3]}};
}

void TrainingRun::restore_log_sums(const TrainingState& checkpoint) {
  const auto losses = checkpoint.scalars.find(kLogLosses);
  if (!is_main() || losses == checkpoint.scalars.end() || losses->second == 0) return;
  // f32, as track_loss sums: the value went out as a double and comes back exactly.
  loss_sum_ =
      full({}, checkpoint.scalars.at(kLogLossSum), TensorOptions{}.with(DType::f32)).to(device_);
  losses_summed_ = int64_t(losses->second);
  frames_since_log_ = int64_t(checkpoint.scalars.at(kLogFrames));
  padded_frames_since_log_ = int64_t(checkpoint.scalars.at(kLogPaddedFrames));
}

void TrainingRun::report_data() {
  const DataReport report = task_.data_report();
  for (const std::string& line : report.lines) progress_.notice(line);
  nlohmann::ordered_json record{{"event", "data"}, {"step", step_}};
  for (const auto& [name, count] : report.counts) record[name] = count;
  for (const auto& [name, inputs] : report.named) record[name] = inputs;
  metrics_.write(record);
}

EvalResult TrainingRun::evaluate(const std::string& split, int64_t epoch) {
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

void TrainingRun::say_where_metrics_go() {
  if (!o_.checkpoint_dir.empty() || !o_.metrics.empty()) return;
  std::error_code error;
  const std::filesystem::path path = std::filesystem::absolute(metrics_path_, error);
  progress_.print(str("no --checkpoint-dir: no checkpoints are written, and the metrics go to ",
                      error ? metrics_path_ : path.string(), " (--metrics FILE to choose)"));
}

}  // namespace sonata

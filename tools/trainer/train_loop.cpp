#include "tools/trainer/train_loop.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <future>
#include <numeric>
#include <random>

#include "base/error.h"
#include "engine/autograd/grad_mode.h"
#include "engine/ops.h"
#include "engine/optim/adamw.h"
#include "engine/optim/clip_grad.h"
#include "engine/optim/lr_schedule.h"
#include "engine/optim/param_groups.h"
#include "engine/optim/sgd.h"
#include "tools/trainer/init_from.h"
#include "tools/trainer/metrics_log.h"
#include "tools/trainer/precision.h"
#include "tools/trainer/progress.h"

namespace sonata {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::unique_ptr<Optimizer> make_optimizer(const TrainerOptions& o, Module& model, double lr) {
  std::vector<ParamGroup> groups =
      o.decay_norm_and_bias ? std::vector<ParamGroup>{ParamGroup{
                                  model.parameters(), {{"weight_decay", o.weight_decay}}}}
                            : weight_decay_groups(model, o.weight_decay);
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
               " leave nothing of the ", length, " ", o.schedule_unit, " of training");
  if (o.schedule == "cosine") schedule.cosine(main, o.min_lr);
  if (o.schedule == "linear") schedule.linear(main, o.min_lr);
  if (o.schedule == "step") schedule.step_decay(main, o.step_every, o.step_gamma);
  if (o.schedule == "constant") schedule.constant(main);
  if (o.flat_tail > 0) schedule.constant(o.flat_tail);
  return schedule;
}

// Shuffled items cut into chunks of many batches, each chunk sorted by length, then the
// batches shuffled: little padding, and every epoch a different order.
std::vector<std::vector<int64_t>> length_bucketed_batches(const std::vector<int64_t>& lengths,
                                                          int64_t batch_size, uint64_t seed,
                                                          int64_t epoch, bool sortagrad) {
  const int64_t count = int64_t(lengths.size());
  std::vector<int64_t> order(static_cast<size_t>(count));
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 generator(seed * 1000003u + uint64_t(epoch));
  auto shuffle = [&](auto& values) {
    for (size_t i = values.size(); i > 1; --i) std::swap(values[i - 1], values[generator() % i]);
  };
  auto by_length = [&](int64_t a, int64_t b) { return lengths[size_t(a)] < lengths[size_t(b)]; };
  if (sortagrad && epoch == 0) {
    std::stable_sort(order.begin(), order.end(), by_length);
  } else {
    shuffle(order);
    const int64_t chunk = batch_size * 50;
    for (int64_t start = 0; start < count; start += chunk)
      std::stable_sort(order.begin() + start, order.begin() + std::min(count, start + chunk),
                       by_length);
  }
  std::vector<std::vector<int64_t>> batches;
  for (int64_t start = 0; start < count; start += batch_size)
    batches.emplace_back(order.begin() + start,
                         order.begin() + std::min(count, start + batch_size));
  if (!(sortagrad && epoch == 0)) shuffle(batches);
  return batches;
}

std::string format_metrics(const std::map<std::string, double>& metrics) {
  std::string text;
  for (const auto& [name, value] : metrics) {
    char figure[64];
    std::snprintf(figure, sizeof figure, "%s %.4f", name.c_str(), value);
    text += (text.empty() ? "" : "  ") + std::string(figure);
  }
  return text;
}

}  // namespace

TrainResult run_training(const TrainerOptions& o, Task& task, Device device) {
  Module& model = task.model();
  const std::string metrics_path = !o.metrics.empty()          ? o.metrics
                                   : !o.checkpoint_dir.empty() ? o.checkpoint_dir + "/metrics.jsonl"
                                                               : std::string("metrics.jsonl");
  MetricsLog metrics(metrics_path, !o.resume.empty());
  // Off a terminal, about four lines an epoch (at log points).
  const int64_t log_lines_every =
      std::max<int64_t>(1, (task.train_items() / o.batch_size / o.accum_steps / 4) / o.log_every) *
      o.log_every;
  Progress progress(o.progress, log_lines_every);
  if (!o.init_from.empty()) progress.print(init_from_weights(model, o.init_from));
  model.to(device);
  cast_for_precision(model, compute_dtype(o.precision));
  model.train();
  TrainResult result;
  const Clock::time_point run_start = Clock::now();
  auto evaluate = [&](const std::string& split, int64_t epoch, int64_t step) {
    EvalResult eval = task.evaluate(split, device);
    nlohmann::ordered_json record{{"event", "eval"}, {"split", split}, {"epoch", epoch},
                                  {"step", step}};
    for (const auto& [name, value] : eval.metrics) record[name] = value;
    record["elapsed_s"] = seconds_since(run_start);
    metrics.write(record);
    return eval;
  };
  if (o.eval_only) {
    progress.print(str("evaluating on ", device.str(), ": ", task.describe()));
    if (task.has_split("val")) result.last_val = evaluate("val", -1, 0);
    if (task.has_split("test")) result.test = evaluate("test", -1, 0);
    return result;
  }

  const std::vector<int64_t> lengths = task.train_lengths();
  const int64_t batches_per_epoch = (task.train_items() + o.batch_size - 1) / o.batch_size;
  const int64_t steps_per_epoch = (batches_per_epoch + o.accum_steps - 1) / o.accum_steps;
  const int64_t total_steps = o.max_steps > 0 ? o.max_steps : steps_per_epoch * o.epochs;
  const int64_t epochs = (total_steps + steps_per_epoch - 1) / steps_per_epoch;
  const int64_t global_batch = o.batch_size * o.accum_steps;
  const double peak_lr =
      scale_lr(o.lr, global_batch, o.reference_batch, parse_lr_scaling_rule(o.lr_scaling));
  const bool in_steps = o.schedule_unit == "steps";
  const LrSchedule schedule =
      make_schedule(o, peak_lr, in_steps ? double(total_steps) : double(epochs));
  auto position = [&](int64_t step) {
    return in_steps ? double(step) : epoch_position(step, steps_per_epoch);
  };
  std::unique_ptr<Optimizer> optimizer = make_optimizer(o, model, peak_lr);
  schedule.apply(*optimizer, position(0));
  const std::vector<Tensor> parameters = model.parameters();

  progress.print(str("training on ", device.str(), ": ", task.describe()));
  progress.print(str(total_steps, " steps (", epochs, " epochs of ", steps_per_epoch, "), batch ",
                     o.batch_size, " x ", o.accum_steps, " accumulated, peak lr ", peak_lr,
                     ", metrics in ", metrics_path));

  int64_t step = 0;
  double wait_seconds = 0;
  int64_t items_since_log = 0;
  Clock::time_point log_start = Clock::now();
  double wait_since_log = 0;
  Tensor loss_sum;  // on the device: the host reads it only at log points
  int64_t losses_summed = 0;
  Tensor norm;

  for (int64_t epoch = 0; epoch < epochs && step < total_steps; ++epoch) {
    const auto batches = length_bucketed_batches(lengths, o.batch_size, o.seed, epoch, o.sortagrad);
    auto prepare = [&](size_t index) {
      return std::async(std::launch::async, [&task, &batches, index, epoch] {
        return task.prepare(batches[index], epoch);
      });
    };
    std::future<HostBatch> next = prepare(0);
    for (size_t index = 0; index < batches.size() && step < total_steps;) {
      // One optimizer step over accum_steps micro-batches (fewer at the end of an epoch).
      const size_t micro = std::min<size_t>(size_t(o.accum_steps), batches.size() - index);
      for (size_t m = 0; m < micro; ++m, ++index) {
        const Clock::time_point wait_start = Clock::now();
        HostBatch batch = next.get();
        const double waited = seconds_since(wait_start);
        wait_seconds += waited;
        wait_since_log += waited;
        if (index + 1 < batches.size()) next = prepare(index + 1);
        Tensor loss = task.loss(batch, device);
        (loss * (1.0 / double(micro))).backward();
        const Tensor detached = loss.detach();
        loss_sum = loss_sum.defined() ? loss_sum + detached : detached;
        ++losses_summed;
        items_since_log += batch.items;
      }
      norm = o.grad_clip > 0 ? clip_grad_norm_(parameters, o.grad_clip) : grad_norm(parameters);
      optimizer->step();
      optimizer->zero_grad();
      ++step;
      schedule.apply(*optimizer, position(step));

      const int64_t step_in_epoch = int64_t(index + o.accum_steps - 1) / o.accum_steps;
      if (step % o.log_every == 0 || step == total_steps || index == batches.size()) {
        const double loss_value = loss_sum.item() / double(losses_summed);
        const double elapsed = seconds_since(log_start);
        const double rate = double(items_since_log) / std::max(elapsed, 1e-9);
        const double eta = seconds_since(run_start) / double(step) * double(total_steps - step);
        nlohmann::ordered_json record{{"event", "train"},
                                      {"epoch", epoch},
                                      {"step", step},
                                      {"loss", loss_value},
                                      {"lr", optimizer->lr(0)},
                                      {"grad_norm", norm.item()},
                                      {"items_per_s", rate},
                                      {"data_wait", wait_since_log / std::max(elapsed, 1e-9)},
                                      {"elapsed_s", seconds_since(run_start)}};
        metrics.write(record);
        progress.update({.epoch = epoch,
                         .epochs = epochs,
                         .step_in_epoch = step_in_epoch,
                         .steps_in_epoch = steps_per_epoch,
                         .step = step,
                         .total_steps = total_steps,
                         .loss = loss_value,
                         .lr = optimizer->lr(0),
                         .items_per_second = rate,
                         .item_name = task.item_name(),
                         .data_wait_share = wait_since_log / std::max(elapsed, 1e-9),
                         .eta_seconds = eta});
        loss_sum = Tensor();
        losses_summed = 0;
        items_since_log = 0;
        wait_since_log = 0;
        log_start = Clock::now();
      }
    }
    if (next.valid()) next.wait();

    const bool last_epoch = epoch + 1 == epochs || step >= total_steps;
    if (task.has_split("val") && ((epoch + 1) % o.eval_every == 0 || last_epoch)) {
      result.last_val = task.evaluate("val", device);
      nlohmann::ordered_json record{
          {"event", "eval"}, {"split", "val"}, {"epoch", epoch}, {"step", step}};
      for (const auto& [name, value] : result.last_val.metrics) record[name] = value;
      record["elapsed_s"] = seconds_since(run_start);
      metrics.write(record);
      progress.print(str("epoch ", epoch + 1, " val: ", format_metrics(result.last_val.metrics),
                         "  (", format_duration(seconds_since(run_start)), " elapsed)"));
    }
  }
  progress.finish();
  result.steps = step;
  if (task.has_split("test")) result.test = evaluate("test", epochs - 1, step);
  return result;
}

}  // namespace sonata

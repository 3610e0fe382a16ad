#include "engine/optim/lr_schedule.h"

#include <cmath>
#include <numbers>
#include <string>

#include "base/error.h"
#include "engine/optim/optimizer.h"

namespace sonata {

LrSchedule::LrSchedule(double peak_lr) : peak_lr_(peak_lr) {
  SONATA_CHECK(peak_lr > 0 && std::isfinite(peak_lr), "LrSchedule: the peak lr ", peak_lr,
               " must be positive");
}

double LrSchedule::end_lr() const {
  if (phases_.empty()) return peak_lr_;
  const Phase& last = phases_.back();
  if (last.shape == Shape::step)
    return last.from_lr * std::pow(last.gamma, std::floor(last.length / last.every));
  return last.to_lr;
}

double LrSchedule::end_time() const {
  return phases_.empty() ? 0.0 : phases_.back().start + phases_.back().length;
}

double LrSchedule::length() const {
  return end_time();
}

LrSchedule& LrSchedule::add(Phase phase) {
  SONATA_CHECK(phase.length >= 0 && std::isfinite(phase.length), "LrSchedule: a phase length ",
               phase.length, " must be finite and not negative");
  SONATA_CHECK(phase.from_lr >= 0 && phase.to_lr >= 0, "LrSchedule: learning rates ", phase.from_lr,
               " and ", phase.to_lr, " must not be negative");
  phase.start = end_time();
  phases_.push_back(phase);
  return *this;
}

LrSchedule& LrSchedule::warmup(double length, double start_lr) {
  const double target = end_lr();
  return add({Shape::linear, 0, length, start_lr, target});
}

LrSchedule& LrSchedule::linear(double length, double end_lr_value) {
  return add({Shape::linear, 0, length, end_lr(), end_lr_value});
}

LrSchedule& LrSchedule::cosine(double length, double floor_lr) {
  return add({Shape::cosine, 0, length, end_lr(), floor_lr});
}

LrSchedule& LrSchedule::constant(double length) {
  const double lr_value = end_lr();
  return add({Shape::constant, 0, length, lr_value, lr_value});
}

LrSchedule& LrSchedule::step_decay(double length, double every, double gamma) {
  SONATA_CHECK(every > 0, "LrSchedule: step decay every ", every, " units must be positive");
  SONATA_CHECK(gamma > 0, "LrSchedule: step decay factor ", gamma, " must be positive");
  const double lr_value = end_lr();
  return add({Shape::step, 0, length, lr_value, lr_value, every, gamma});
}

double LrSchedule::lr(double position) const {
  if (phases_.empty()) return peak_lr_;
  if (position < 0) return phases_.front().from_lr;
  for (const Phase& phase : phases_) {
    if (position >= phase.start + phase.length) continue;
    const double t = position - phase.start;
    switch (phase.shape) {
      case Shape::linear:
        return phase.from_lr + (phase.to_lr - phase.from_lr) * (t / phase.length);
      case Shape::cosine:
        return phase.to_lr + (phase.from_lr - phase.to_lr) *
                                 (1 + std::cos(std::numbers::pi * t / phase.length)) / 2;
      case Shape::constant:
        return phase.from_lr;
      case Shape::step:
        return phase.from_lr * std::pow(phase.gamma, std::floor(t / phase.every));
    }
  }
  return end_lr();
}

void LrSchedule::apply(Optimizer& optimizer, double position) const {
  const double factor = lr(position) / peak_lr_;
  for (size_t g = 0; g < optimizer.group_count(); ++g)
    optimizer.set_lr(g, optimizer.initial_lr(g) * factor);
}

double epoch_position(int64_t step, int64_t steps_per_epoch) {
  SONATA_CHECK(steps_per_epoch > 0, "epoch_position: steps per epoch ", steps_per_epoch,
               " must be positive");
  return double(step) / double(steps_per_epoch);
}

LrScalingRule parse_lr_scaling_rule(std::string_view name) {
  if (name == "none") return LrScalingRule::none;
  if (name == "linear") return LrScalingRule::linear;
  if (name == "sqrt") return LrScalingRule::sqrt;
  throw Error(str("unknown lr scaling rule '", std::string(name), "' (none, linear or sqrt)"));
}

double scale_lr(double reference_lr, int64_t global_batch, int64_t reference_batch,
                LrScalingRule rule) {
  SONATA_CHECK(global_batch > 0 && reference_batch > 0, "scale_lr: batch sizes ", global_batch,
               " and ", reference_batch, " must be positive");
  const double ratio = double(global_batch) / double(reference_batch);
  switch (rule) {
    case LrScalingRule::none:
      return reference_lr;
    case LrScalingRule::linear:
      return reference_lr * ratio;
    case LrScalingRule::sqrt:
      return reference_lr * std::sqrt(ratio);
  }
  SONATA_UNREACHABLE("scale_lr: unknown rule");
}

}  // namespace sonata

#pragma once
// Learning-rate schedules as pure functions of the position (epochs or steps, fractional
// allowed), so a resumed run needs only its position to continue exactly. A schedule is a
// chain of phases, each starting from the lr the previous one ended with:
//
//   LrSchedule schedule(0.1);   // the peak lr
//   schedule.warmup(5, 0.0)     // 5 units linearly from 0 up to the peak
//       .cosine(25, 1e-4)       // 25 units of cosine decay to the floor 1e-4
//       .constant(10);          // 10 flat (and flat after the last phase anyway)
//
// matches torch's LinearLR, CosineAnnealingLR (closed form), ConstantLR and StepLR chained by
// SequentialLR, evaluated at the same positions.
#include <cstdint>
#include <string_view>
#include <vector>

namespace sonata {

class Optimizer;

class LrSchedule {
 public:
  explicit LrSchedule(double peak_lr);

  // Linear from start_lr up to the current lr (the peak, as the first phase).
  LrSchedule& warmup(double length, double start_lr);
  // Linear from the current lr to end_lr.
  LrSchedule& linear(double length, double end_lr);
  // floor + (current - floor) * (1 + cos(pi * t / length)) / 2.
  LrSchedule& cosine(double length, double floor_lr);
  LrSchedule& constant(double length);
  // The current lr times gamma^floor(t / every).
  LrSchedule& step_decay(double length, double every, double gamma);

  // The lr at `position` (units since the start); before 0 the first phase's start, after
  // the last phase its end.
  double lr(double position) const;
  double peak_lr() const { return peak_lr_; }
  double length() const;
  // Sets each group's lr to its initial lr scaled as this schedule scales its peak, so
  // groups built with different lrs keep their ratios.
  void apply(Optimizer& optimizer, double position) const;

 private:
  enum class Shape { linear, cosine, constant, step };
  struct Phase {
    Shape shape;
    double start, length, from_lr, to_lr;
    double every = 1, gamma = 1;
  };
  double end_lr() const;
  double end_time() const;
  LrSchedule& add(Phase phase);

  double peak_lr_;
  std::vector<Phase> phases_;
};

// The position in epochs after `step` optimizer steps of `steps_per_epoch` each.
double epoch_position(int64_t step, int64_t steps_per_epoch);

// Scaling a reference lr to a global batch size: linear (Goyal et al., for SGD) or square
// root (common for Adam). "none" | "linear" | "sqrt" from a flag.
enum class LrScalingRule { none, linear, sqrt };
LrScalingRule parse_lr_scaling_rule(std::string_view name);
double scale_lr(double reference_lr, int64_t global_batch, int64_t reference_batch,
                LrScalingRule rule);

}  // namespace sonata

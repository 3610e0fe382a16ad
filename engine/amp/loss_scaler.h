#pragma once
// Dynamic loss scaling for fp16 training, as torch.cuda.amp.GradScaler (PyTorch 1.13): the
// loss is multiplied by a scale before backward so that small gradients survive f16; the
// gradients are unscaled before the step, a step whose gradients hold an inf or NaN is
// skipped, and the scale halves after such a step and doubles after `growth_interval`
// clean ones. The scale (f32), the growth tracker (i32) and the overflow flag (f32) live on
// the device, as torch keeps them: no call in the step loop waits for the host.
//
// One step:
//   scaler.scale(loss).backward();
//   scaler.unscale_(params);                       // optional: before clipping, say
//   optimizer.step(scaler.step_scaling(params));   // skipped on the device if found_inf
//   scaler.update();
// One scaler serves one set of parameters per step (torch keeps one state per optimizer).
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "engine/device.h"
#include "engine/optim/optimizer.h"
#include "engine/tensor.h"

namespace sonata {

struct LossScalerOptions {
  double init_scale = 65536.0;
  // growth_factor >= 1, backoff_factor in (0, 1]; both 1 keep the scale fixed, which leaves
  // the inf/NaN check that skips a poisoned step (the trainer's guard in fp32 and bf16).
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int64_t growth_interval = 2000;
  bool enabled = true;
};

class LossScaler {
 public:
  explicit LossScaler(Device device, const LossScalerOptions& options = {});

  bool enabled() const { return enabled_; }
  Device device() const { return device_; }

  // loss * scale, recorded by autograd; f32 for a half-precision loss (so that the scaled
  // loss itself does not overflow). The loss unchanged when disabled.
  Tensor scale(const Tensor& loss) const;
  // Every gradient of `params` multiplied by 1 / scale in place, and found_inf raised if any
  // element of any of them is inf or NaN: one fused pass per dtype. Gradients may be f16,
  // bf16, f32 (and f64 on the CPU) and must live on the scaler's device; parameters without
  // a gradient are skipped. At most once between two update()s, and not after step_scaling.
  void unscale_(const std::vector<Tensor>& params);
  // What optimizer.step() takes: {undefined, found_inf} after unscale_; otherwise this runs
  // the inf/NaN check over the gradients of `params` (a read-only pass) and returns
  // {inv_scale, found_inf}, so that the optimizer unscales as it reads. Once per step: a
  // second call before update() is an error, as torch's second scaler.step().
  StepScaling step_scaling(const std::vector<Tensor>& params);
  // After the step, on the device: found_inf ? scale *= backoff_factor, tracker = 0
  // : (++tracker == growth_interval ? scale *= growth_factor, tracker = 0); then found_inf
  // is cleared. Needs unscale_ or step_scaling since the last update().
  void update();

  // Reads of the device (they wait for it): for logging and tests. 1, false and 0 when
  // disabled.
  double scale_value() const;
  bool found_inf_value() const;
  int64_t growth_tracker_value() const;
  // The overflow flag itself ([1] f32 on the device, shared): a distributed caller whose
  // processes hold different gradients (pipeline stages) sums it over them between unscale_
  // and step_scaling, so that every process skips the same steps. Undefined when disabled.
  Tensor found_inf_flag() const { return found_inf_; }

  // "scale", "growth_factor", "backoff_factor", "growth_interval", "growth_tracker" (torch's
  // keys without the underscore); empty when disabled, as torch's.
  std::map<std::string, double> state_dict() const;
  // Every missing or unknown key and every value out of range in one error, and nothing
  // changes then. A disabled scaler ignores the state, as torch's does.
  void load_state_dict(const std::map<std::string, double>& state);

 private:
  enum class Stage { ready, unscaled, stepped };

  Device device_;
  bool enabled_;
  double growth_factor_;
  double backoff_factor_;
  int64_t growth_interval_;
  Tensor scale_;           // [1] f32
  Tensor inv_scale_;       // [1] f32, 1 / scale in double rounded, kept beside it
  Tensor growth_tracker_;  // [1] i32
  Tensor found_inf_;       // [1] f32, 0 or 1
  Stage stage_ = Stage::ready;
};

}  // namespace sonata

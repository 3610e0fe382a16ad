#include "engine/amp/loss_scaler.h"

#include <cmath>
#include <cstdint>
#include <limits>

#include "base/error.h"
#include "engine/autograd/grad_mode.h"
#include "engine/ops.h"
#include "engine/ops/backend.h"
#include "kernels/cpu/amp.h"
#if SONATA_WITH_CUDA
#include "kernels/cuda/amp.h"
#endif

namespace sonata {
namespace {

const char* const kStateKeys[] = {"scale", "growth_factor", "backoff_factor", "growth_interval",
                                  "growth_tracker"};

// The options' ranges, as torch's GradScaler asserts them; each problem one phrase.
std::vector<std::string> option_problems(double scale, double growth_factor, double backoff_factor,
                                         double growth_interval) {
  std::vector<std::string> problems;
  if (!(scale > 0 && std::isfinite(scale)))
    problems.push_back(str("scale ", scale, " is not a positive finite number"));
  // 1 and 1 keep the scale fixed: the inf/NaN guard without scaling (fp32 and bf16 runs).
  if (!(growth_factor >= 1 && std::isfinite(growth_factor)))
    problems.push_back(str("growth_factor ", growth_factor, " is not >= 1"));
  if (!(backoff_factor > 0 && backoff_factor <= 1))
    problems.push_back(str("backoff_factor ", backoff_factor, " is not in (0, 1]"));
  if (!(growth_interval >= 1 && growth_interval <= std::numeric_limits<int32_t>::max() &&
        growth_interval == std::floor(growth_interval)))
    problems.push_back(str("growth_interval ", growth_interval, " is not a whole number in [1, ",
                           std::numeric_limits<int32_t>::max(), "]"));
  return problems;
}

std::string join(const std::vector<std::string>& parts) {
  std::string out;
  for (const std::string& part : parts) out += (out.empty() ? "" : "; ") + part;
  return out;
}

// The gradients of `params` by dtype (one kernel call each), checked against the scaler's
// device. Non-contiguous gradients are replaced by contiguous copies, since the pass writes
// in place.
struct GradLists {
  std::map<DType, std::vector<void*>> pointers;
  std::map<DType, std::vector<int64_t>> numels;
};

GradLists collect_grads(const std::vector<Tensor>& params, Device device, const char* caller) {
  GradLists lists;
  for (size_t k = 0; k < params.size(); ++k) {
    Tensor p = params[k];
    if (!p.defined() || !p.grad().defined()) continue;
    Tensor grad = p.grad();
    SONATA_CHECK(grad.device() == device, caller, ": the gradient of parameter ", k, " is on ",
                 grad.device().str(), " but the scaler is on ", device.str());
    SONATA_CHECK(is_floating(grad.dtype()), caller, ": the gradient of parameter ", k, " is ",
                 dtype_name(grad.dtype()), ", not floating-point");
    if (!grad.is_contiguous()) {
      grad = grad.contiguous();
      p.set_grad(grad);
    }
    lists.pointers[grad.dtype()].push_back(grad.data_ptr());
    lists.numels[grad.dtype()].push_back(grad.numel());
  }
  return lists;
}

// The fused pass over every list; inv_scale null checks without writing.
void check_and_unscale(const GradLists& lists, Device device, float* found_inf,
                       const float* inv_scale) {
  for (const auto& [dtype, pointers] : lists.pointers)
    SONATA_BACKEND(device, non_finite_check_and_unscale, dtype, pointers.data(),
                   lists.numels.at(dtype).data(), int64_t(pointers.size()), found_inf, inv_scale);
}

}  // namespace

LossScaler::LossScaler(Device device, const LossScalerOptions& options)
    : device_(device),
      enabled_(options.enabled),
      growth_factor_(options.growth_factor),
      backoff_factor_(options.backoff_factor),
      growth_interval_(options.growth_interval) {
  if (!enabled_) return;
  const std::vector<std::string> problems = option_problems(
      options.init_scale, growth_factor_, backoff_factor_, double(growth_interval_));
  SONATA_CHECK(problems.empty(), "LossScaler: bad options: ", join(problems));
  const TensorOptions f32 = TensorOptions{}.with(DType::f32).with(device_);
  scale_ = full({1}, options.init_scale, f32);
  inv_scale_ = full({1}, float(1.0 / double(float(options.init_scale))), f32);
  growth_tracker_ = zeros({1}, TensorOptions{}.with(DType::i32).with(device_));
  found_inf_ = zeros({1}, f32);
}

Tensor LossScaler::scale(const Tensor& loss) const {
  if (!enabled_) return loss;
  SONATA_CHECK(loss.defined(), "LossScaler.scale: the loss is undefined");
  SONATA_CHECK(loss.device() == device_, "LossScaler.scale: the loss is on ", loss.device().str(),
               " but the scaler is on ", device_.str());
  SONATA_CHECK(is_floating(loss.dtype()), "LossScaler.scale: the loss is ",
               dtype_name(loss.dtype()), ", not floating-point");
  // A 0-dim view of the scale keeps the loss's shape; f32 x half promotes to f32.
  return mul(loss, scale_.reshape({}));
}

void LossScaler::unscale_(const std::vector<Tensor>& params) {
  if (!enabled_) return;
  SONATA_CHECK(stage_ != Stage::unscaled,
               "LossScaler.unscale_: already called since the last update()");
  SONATA_CHECK(stage_ != Stage::stepped,
               "LossScaler.unscale_: called after step_scaling(); unscale before the step");
  NoGradGuard no_grad;
  const GradLists lists = collect_grads(params, device_, "LossScaler.unscale_");
  check_and_unscale(lists, device_, found_inf_.data<float>(), inv_scale_.data<float>());
  stage_ = Stage::unscaled;
}

StepScaling LossScaler::step_scaling(const std::vector<Tensor>& params) {
  if (!enabled_) return {};
  SONATA_CHECK(stage_ != Stage::stepped,
               "LossScaler.step_scaling: already called since the last update()");
  if (stage_ == Stage::unscaled) {
    stage_ = Stage::stepped;
    return {Tensor(), found_inf_};
  }
  NoGradGuard no_grad;
  const GradLists lists = collect_grads(params, device_, "LossScaler.step_scaling");
  check_and_unscale(lists, device_, found_inf_.data<float>(), nullptr);
  stage_ = Stage::stepped;
  return {inv_scale_, found_inf_};
}

void LossScaler::update() {
  if (!enabled_) return;
  SONATA_CHECK(stage_ != Stage::ready,
               "LossScaler.update: no inf/NaN check since the last update() (call unscale_ or "
               "step_scaling first)");
  SONATA_BACKEND(device_, update_scale, scale_.data<float>(), inv_scale_.data<float>(),
                 growth_tracker_.data<int32_t>(), found_inf_.data<float>(), growth_factor_,
                 backoff_factor_, growth_interval_);
  stage_ = Stage::ready;
}

double LossScaler::scale_value() const {
  return enabled_ ? scale_.item() : 1.0;
}

bool LossScaler::found_inf_value() const {
  return enabled_ && found_inf_.item() != 0;
}

int64_t LossScaler::growth_tracker_value() const {
  return enabled_ ? int64_t(growth_tracker_.item()) : 0;
}

std::map<std::string, double> LossScaler::state_dict() const {
  if (!enabled_) return {};
  return {{"scale", scale_value()},
          {"growth_factor", growth_factor_},
          {"backoff_factor", backoff_factor_},
          {"growth_interval", double(growth_interval_)},
          {"growth_tracker", double(growth_tracker_value())}};
}

void LossScaler::load_state_dict(const std::map<std::string, double>& state) {
  if (!enabled_) return;
  SONATA_CHECK(!state.empty(),
               "LossScaler.load_state_dict: the state is empty (saved from a disabled scaler?)");
  std::vector<std::string> problems;
  for (const char* key : kStateKeys)
    if (!state.count(key)) problems.push_back(str("'", key, "' is missing"));
  for (const auto& [key, value] : state) {
    bool known = false;
    for (const char* k : kStateKeys) known = known || key == k;
    if (!known) problems.push_back(str("'", key, "' is not a loss scaler entry"));
  }
  if (problems.empty()) {
    problems = option_problems(state.at("scale"), state.at("growth_factor"),
                               state.at("backoff_factor"), state.at("growth_interval"));
    const double tracker = state.at("growth_tracker");
    if (!(tracker >= 0 && tracker < state.at("growth_interval") && tracker == std::floor(tracker)))
      problems.push_back(str("growth_tracker ", tracker, " is not a count below growth_interval"));
  }
  SONATA_CHECK(problems.empty(),
               "LossScaler.load_state_dict: the state does not fit: ", join(problems));

  NoGradGuard no_grad;
  growth_factor_ = state.at("growth_factor");
  backoff_factor_ = state.at("backoff_factor");
  growth_interval_ = int64_t(state.at("growth_interval"));
  const float scale = float(state.at("scale"));
  scale_.fill_(scale);
  inv_scale_.fill_(float(1.0 / double(scale)));
  growth_tracker_.fill_(state.at("growth_tracker"));
  found_inf_.zero_();
  stage_ = Stage::ready;
}

}  // namespace sonata

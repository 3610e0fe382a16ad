#pragma once
// Optimizer: parameter groups with their own hyper-parameters, per-parameter state, and a
// state dict that makes a resume exact, as torch.optim.Optimizer. Subclasses (SGD, Adam /
// AdamW) say how a group steps; the base owns the bookkeeping.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "engine/nn/module.h"
#include "engine/tensor.h"
#include "kernels/common/optimizer.h"

namespace sonata {

// A group's hyper-parameters by name, as torch's param_group dict ("lr", "weight_decay",
// "momentum", "beta1", ...); switches are 0 or 1.
using HyperParameters = std::map<std::string, double>;

struct ParamGroup {
  std::vector<Tensor> params;
  HyperParameters options;  // overrides of the optimizer's defaults; unknown names are errors
};

// The optimizer's state for a checkpoint. Tensors "state.<i>.<buffer>" (momentum_buffer,
// exp_avg, exp_avg_sq, max_exp_avg_sq, master), i numbering the parameters across groups
// in order; scalars "state.<i>.step" and "param_groups.<g>.<option>", with
// "param_groups.<g>.params" the group's size. The tensors are the optimizer's own buffers,
// as torch's state_dict returns them: save or copy them before stepping again.
struct OptimizerState {
  NamedTensors tensors;
  std::map<std::string, double> scalars;
};

// The loss scaler's hook (both optional, one f32 element each, on the parameters' device):
// gradients are multiplied by inv_scale as the update reads them, and nothing changes when
// found_inf is non-zero, without the host waiting for either. A step skipped this way still
// counts for Adam's bias correction and SGD's first-step rule, which PyTorch's GradScaler
// (skipping optimizer.step() on the host) does not.
struct StepScaling {
  Tensor inv_scale;
  Tensor found_inf;
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // Updates every parameter that has a gradient; the others are left alone, state and all.
  void step(const StepScaling& scaling = {});
  // set_to_none drops the gradients (the next backward allocates them); otherwise zeroes them.
  void zero_grad(bool set_to_none = true);

  size_t group_count() const { return groups_.size(); }
  const std::vector<ParamGroup>& param_groups() const { return groups_; }
  double lr(size_t group) const { return option(group, "lr"); }
  void set_lr(size_t group, double lr) { set_option(group, "lr", lr); }
  // The lr the group was built with: schedules scale it (torch's "initial_lr").
  double initial_lr(size_t group) const { return option(group, "initial_lr"); }
  double option(size_t group, const std::string& name) const;
  void set_option(size_t group, const std::string& name, double value);

  OptimizerState state_dict() const;
  // Replaces the state and the groups' hyper-parameters with copies of `state`'s, on the
  // parameters' devices. Every difference from this optimizer (group sizes, shapes, unknown
  // names) is listed in one error, and nothing changes then.
  void load_state_dict(const OptimizerState& state);

 protected:
  struct ParamState {
    int64_t step = 0;
    std::map<std::string, Tensor> buffers;
  };

  // `kind` names the optimizer in errors; `defaults` holds every option it knows.
  Optimizer(std::string kind, std::vector<ParamGroup> groups, HyperParameters defaults,
            std::vector<std::string> buffer_names);

  // Steps the parameters of `group` listed in `params` (indices across groups, all with a
  // gradient).
  virtual void step_group(size_t group, const std::vector<size_t>& params,
                          const StepScaling& scaling) = 0;
  // Throws naming the group when its options are out of range.
  virtual void check_options(size_t group) const = 0;

  const std::string& kind() const { return kind_; }
  const Tensor& param(size_t index) const { return params_[index]; }
  ParamState& state(size_t index) { return state_[index]; }
  // The buffer `name` of a parameter, created as zeros of the state dtype on first use.
  Tensor& buffer(size_t index, const std::string& name);
  // The fp32 copy a half-precision parameter's updates run on ("master"), made from the
  // parameter on first use; undefined for other dtypes.
  Tensor master(size_t index);
  // A parameter's gradient as the fused kernels read it (contiguous, the parameter's dtype),
  // after checking that the parameter can be updated in place where it lives.
  Tensor update_grad(size_t index) const;
  // f32 for half-precision parameters, else theirs.
  static DType state_dtype(DType param_dtype);
  // The scaler's tensors as kernel pointers, checked against the parameters' device.
  kernels::GradScaling scaling_pointers(const StepScaling& scaling, Device device) const;

 private:
  std::string kind_;
  std::vector<ParamGroup> groups_;
  std::vector<std::vector<size_t>> group_params_;
  std::vector<Tensor> params_;
  std::vector<ParamState> state_;
  std::vector<std::string> buffer_names_;
};

}  // namespace sonata

#include "engine/optim/optimizer.h"

#include <algorithm>
#include <charconv>
#include <set>
#include <utility>

#include "base/error.h"
#include "engine/autograd/grad_mode.h"

namespace sonata {
namespace {

// "<prefix><index>.<rest>" -> index and rest; false when the name is not of that form.
bool parse_indexed(const std::string& name, const std::string& prefix, size_t* index,
                   std::string* rest) {
  if (name.rfind(prefix, 0) != 0) return false;
  const char* first = name.data() + prefix.size();
  const char* last = name.data() + name.size();
  const auto [end, error] = std::from_chars(first, last, *index);
  if (error != std::errc() || end == first || end == last || *end != '.') return false;
  *rest = std::string(end + 1, last);
  return !rest->empty();
}

std::string join(const std::vector<std::string>& parts) {
  std::string out;
  for (const std::string& part : parts) out += (out.empty() ? "" : "; ") + part;
  return out;
}

}  // namespace

Optimizer::Optimizer(std::string kind, std::vector<ParamGroup> groups, HyperParameters defaults,
                     std::vector<std::string> buffer_names)
    : kind_(std::move(kind)), groups_(std::move(groups)), buffer_names_(std::move(buffer_names)) {
  defaults.emplace("initial_lr", defaults.at("lr"));
  std::set<const TensorImpl*> seen;
  for (size_t g = 0; g < groups_.size(); ++g) {
    ParamGroup& group = groups_[g];
    for (const auto& [name, value] : group.options)
      SONATA_CHECK(defaults.count(name), kind_, ": parameter group ", g, " sets '", name,
                   "', which is not an option of ", kind_);
    const bool lr_overridden = group.options.count("lr") && !group.options.count("initial_lr");
    for (const auto& [name, value] : defaults) group.options.emplace(name, value);
    if (lr_overridden) group.options["initial_lr"] = group.options["lr"];
    group_params_.emplace_back();
    for (size_t k = 0; k < group.params.size(); ++k) {
      const Tensor& p = group.params[k];
      SONATA_CHECK(p.defined(), kind_, ": parameter ", k, " of group ", g, " is undefined");
      SONATA_CHECK(is_floating(p.dtype()), kind_, ": parameter ", k, " of group ", g, " is ",
                   dtype_name(p.dtype()), "; only floating-point tensors can be optimized");
      SONATA_CHECK(p.is_leaf(), kind_, ": parameter ", k, " of group ", g,
                   " is not a leaf (it has a grad_fn), so it has no gradient to step with");
      SONATA_CHECK(seen.insert(p.impl_ptr().get()).second, kind_, ": parameter ", k, " of group ",
                   g, " appears more than once across the parameter groups");
      group_params_.back().push_back(params_.size());
      params_.push_back(p);
    }
  }
  SONATA_CHECK(!params_.empty(), kind_, ": got an empty parameter list");
  state_.resize(params_.size());
}

void Optimizer::step(const StepScaling& scaling) {
  NoGradGuard no_grad;
  for (size_t g = 0; g < groups_.size(); ++g) {
    std::vector<size_t> with_grad;
    for (size_t index : group_params_[g])
      if (params_[index].grad().defined()) with_grad.push_back(index);
    if (!with_grad.empty()) step_group(g, with_grad, scaling);
  }
}

void Optimizer::zero_grad(bool set_to_none) {
  NoGradGuard no_grad;
  for (Tensor& p : params_) {
    if (set_to_none) {
      p.set_grad(Tensor());
    } else if (p.grad().defined()) {
      p.grad().zero_();
    }
  }
}

double Optimizer::option(size_t group, const std::string& name) const {
  SONATA_CHECK(group < groups_.size(), kind_, ": no parameter group ", group, " (there are ",
               groups_.size(), ")");
  const auto found = groups_[group].options.find(name);
  SONATA_CHECK(found != groups_[group].options.end(), kind_, " has no option '", name, "'");
  return found->second;
}

void Optimizer::set_option(size_t group, const std::string& name, double value) {
  const double previous = option(group, name);
  groups_[group].options[name] = value;
  try {
    check_options(group);
  } catch (...) {
    groups_[group].options[name] = previous;
    throw;
  }
}

OptimizerState Optimizer::state_dict() const {
  OptimizerState out;
  for (size_t g = 0; g < groups_.size(); ++g) {
    const std::string prefix = str("param_groups.", g, ".");
    out.scalars[prefix + "params"] = double(group_params_[g].size());
    for (const auto& [name, value] : groups_[g].options) out.scalars[prefix + name] = value;
  }
  for (size_t i = 0; i < state_.size(); ++i) {
    const std::string prefix = str("state.", i, ".");
    if (state_[i].step > 0) out.scalars[prefix + "step"] = double(state_[i].step);
    for (const auto& [name, tensor] : state_[i].buffers)
      out.tensors.emplace_back(prefix + name, tensor);
  }
  return out;
}

void Optimizer::load_state_dict(const OptimizerState& state) {
  std::vector<std::string> problems;
  std::vector<HyperParameters> options(groups_.size());
  std::vector<ParamState> loaded(params_.size());
  size_t groups_in_state = 0;

  for (const auto& [name, value] : state.scalars) {
    size_t index = 0;
    std::string rest;
    if (parse_indexed(name, "param_groups.", &index, &rest)) {
      if (index >= groups_.size()) {
        problems.push_back(str(name, ": there are only ", groups_.size(), " parameter groups"));
      } else if (rest == "params") {
        groups_in_state = std::max(groups_in_state, index + 1);
        if (value != double(group_params_[index].size()))
          problems.push_back(str("group ", index, " has ", group_params_[index].size(),
                                 " parameters here but ", value, " in the state"));
      } else if (!groups_[index].options.count(rest)) {
        problems.push_back(str(name, ": '", rest, "' is not an option of ", kind_));
      } else {
        options[index][rest] = value;
      }
    } else if (parse_indexed(name, "state.", &index, &rest) && rest == "step") {
      if (index >= params_.size()) {
        problems.push_back(str(name, ": there are only ", params_.size(), " parameters"));
      } else if (value < 0 || value != double(int64_t(value))) {
        problems.push_back(str(name, " = ", value, " is not a step count"));
      } else {
        loaded[index].step = int64_t(value);
      }
    } else {
      problems.push_back(str("unknown entry '", name, "'"));
    }
  }
  if (groups_in_state != groups_.size())
    problems.push_back(str("the state has ", groups_in_state, " parameter groups, ", kind_, " has ",
                           groups_.size()));
  for (size_t g = 0; g < std::min(groups_in_state, groups_.size()); ++g)
    for (const auto& [name, value] : groups_[g].options)
      if (!options[g].count(name))
        problems.push_back(str("param_groups.", g, ".", name, " is missing"));

  for (const auto& [name, tensor] : state.tensors) {
    size_t index = 0;
    std::string buffer_name;
    if (!parse_indexed(name, "state.", &index, &buffer_name)) {
      problems.push_back(str("unknown tensor '", name, "'"));
      continue;
    }
    if (index >= params_.size()) {
      problems.push_back(str(name, ": there are only ", params_.size(), " parameters"));
      continue;
    }
    const Tensor& p = params_[index];
    if (std::find(buffer_names_.begin(), buffer_names_.end(), buffer_name) == buffer_names_.end()) {
      problems.push_back(str(name, ": '", buffer_name, "' is not state of ", kind_));
    } else if (!tensor.defined() || tensor.shape() != p.shape()) {
      problems.push_back(str(name, " has shape ",
                             tensor.defined() ? shape_str(tensor.shape()) : "(undefined)",
                             ", the parameter ", shape_str(p.shape())));
    } else if (!is_floating(tensor.dtype())) {
      problems.push_back(str(name, " is ", dtype_name(tensor.dtype()), ", not floating-point"));
    } else {
      loaded[index].buffers[buffer_name] = tensor;
    }
  }
  SONATA_CHECK(problems.empty(), kind_,
               ".load_state_dict: the state does not fit: ", join(problems));

  // Copies, so that the source (another optimizer, a loaded file) stays independent.
  NoGradGuard no_grad;
  for (size_t i = 0; i < params_.size(); ++i) {
    for (auto& [name, tensor] : loaded[i].buffers) {
      Tensor copy =
          empty(params_[i].shape(),
                TensorOptions{}.with(state_dtype(params_[i].dtype())).with(params_[i].device()));
      copy.copy_(tensor);
      tensor = copy;
    }
  }
  const std::vector<ParamGroup> previous = groups_;
  for (size_t g = 0; g < groups_.size(); ++g) groups_[g].options = options[g];
  try {
    for (size_t g = 0; g < groups_.size(); ++g) check_options(g);
  } catch (...) {
    groups_ = previous;
    throw;
  }
  state_ = std::move(loaded);
}

Tensor& Optimizer::buffer(size_t index, const std::string& name) {
  auto& buffers = state_[index].buffers;
  auto found = buffers.find(name);
  if (found == buffers.end()) {
    const Tensor& p = params_[index];
    found = buffers
                .emplace(name, zeros(p.shape(),
                                     TensorOptions{}.with(state_dtype(p.dtype())).with(p.device())))
                .first;
  }
  return found->second;
}

Tensor Optimizer::master(size_t index) {
  const Tensor& p = params_[index];
  if (!is_half(p.dtype())) return Tensor();
  auto& buffers = state_[index].buffers;
  auto found = buffers.find("master");
  if (found == buffers.end()) found = buffers.emplace("master", p.detach().to(DType::f32)).first;
  return found->second;
}

Tensor Optimizer::update_grad(size_t index) const {
  const Tensor& p = params_[index];
  SONATA_CHECK(p.is_contiguous(), kind_, ": parameter ", index, " is not contiguous");
  SONATA_CHECK(!(is_half(p.dtype()) && p.device().is_cpu()), kind_, ": parameter ", index, " is ",
               dtype_name(p.dtype()), " on the CPU; half-precision parameters train on CUDA");
  const Tensor grad = p.grad();
  SONATA_CHECK(grad.dtype() == p.dtype() && grad.device() == p.device(), kind_,
               ": the gradient of parameter ", index, " is ", dtype_name(grad.dtype()), " on ",
               grad.device().str(), ", the parameter ", dtype_name(p.dtype()), " on ",
               p.device().str());
  return grad.contiguous();
}

DType Optimizer::state_dtype(DType param_dtype) {
  return is_half(param_dtype) ? DType::f32 : param_dtype;
}

kernels::GradScaling Optimizer::scaling_pointers(const StepScaling& scaling, Device device) const {
  auto pointer = [&](const Tensor& tensor, const char* what) -> const float* {
    if (!tensor.defined()) return nullptr;
    SONATA_CHECK(tensor.dtype() == DType::f32 && tensor.numel() == 1, kind_, ".step: ", what,
                 " must be one f32 element, got ", dtype_name(tensor.dtype()), " of shape ",
                 shape_str(tensor.shape()));
    SONATA_CHECK(tensor.device() == device, kind_, ".step: ", what, " is on ",
                 tensor.device().str(), " but the parameters are on ", device.str());
    return static_cast<const float*>(tensor.data_ptr());
  };
  return {pointer(scaling.inv_scale, "inv_scale"), pointer(scaling.found_inf, "found_inf")};
}

}  // namespace sonata

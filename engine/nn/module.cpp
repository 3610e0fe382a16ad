#include "engine/nn/module.h"

#include "base/error.h"
#include "engine/autograd/grad_mode.h"

namespace sonata {

Tensor Module::forward(const Tensor&) {
  throw Error("this module has no single-input forward(); call its own forward method");
}

Tensor& Module::register_parameter(const std::string& name, Tensor value) {
  SONATA_CHECK(name.find('.') == std::string::npos, "parameter name '", name, "' contains '.'");
  for (const auto& [existing, t] : parameters_)
    SONATA_CHECK(existing != name, "parameter '", name, "' registered twice");
  if (value.defined() && !value.requires_grad()) {
    value = value.detach();
    value.set_requires_grad(true);
  }
  parameters_.emplace_back(name, value);
  return parameters_.back().second;
}

Tensor& Module::register_buffer(const std::string& name, Tensor value) {
  SONATA_CHECK(name.find('.') == std::string::npos, "buffer name '", name, "' contains '.'");
  buffers_.emplace_back(name, value);
  return buffers_.back().second;
}

void Module::add_child(const std::string& name, std::shared_ptr<Module> module) {
  SONATA_CHECK(module, "module '", name, "' is null");
  for (const auto& [existing, child] : children_)
    SONATA_CHECK(existing != name, "module '", name, "' registered twice");
  children_.emplace_back(name, std::move(module));
}

void Module::collect(const std::string& prefix, NamedTensors* parameters,
                     NamedTensors* buffers) const {
  if (parameters)
    for (const auto& [name, t] : parameters_)
      if (t.defined()) parameters->emplace_back(prefix + name, t);
  if (buffers)
    for (const auto& [name, t] : buffers_)
      if (t.defined()) buffers->emplace_back(prefix + name, t);
  for (const auto& [name, child] : children_)
    child->collect(prefix + name + ".", parameters, buffers);
}

NamedTensors Module::named_parameters() const {
  NamedTensors out;
  collect("", &out, nullptr);
  return out;
}

NamedTensors Module::named_buffers() const {
  NamedTensors out;
  collect("", nullptr, &out);
  return out;
}

std::vector<Tensor> Module::parameters() const {
  std::vector<Tensor> out;
  for (auto& [name, t] : named_parameters()) out.push_back(t);
  return out;
}

NamedTensors Module::state_dict() const {
  // torch orders a module's own parameters, then its buffers, then each child in turn.
  NamedTensors out;
  struct Walker {
    static void walk(const Module& m, const std::string& prefix, NamedTensors& out) {
      for (const auto& [name, t] : m.parameters_)
        if (t.defined()) out.emplace_back(prefix + name, t);
      for (const auto& [name, t] : m.buffers_)
        if (t.defined()) out.emplace_back(prefix + name, t);
      for (const auto& [name, child] : m.children_) walk(*child, prefix + name + ".", out);
    }
  };
  Walker::walk(*this, "", out);
  return out;
}

int64_t Module::parameter_count() const {
  int64_t count = 0;
  for (const auto& [name, t] : named_parameters()) count += t.numel();
  return count;
}

void Module::train(bool training) {
  training_ = training;
  for (auto& [name, child] : children_) child->train(training);
}

void Module::to(Device device) {
  NoGradGuard no_grad;
  for (auto& [name, t] : named_parameters()) t.set_data(t.to(device));
  for (auto& [name, t] : named_buffers()) t.set_data(t.to(device));
}

void Module::to(DType dtype) {
  NoGradGuard no_grad;
  for (auto& [name, t] : named_parameters()) t.set_data(t.to(dtype));
  for (auto& [name, t] : named_buffers())
    if (is_floating(t.dtype())) t.set_data(t.to(dtype));
}

void Module::zero_grad() {
  for (auto& [name, t] : named_parameters()) t.set_grad(Tensor());
}

void Sequential::push_back(std::shared_ptr<Module> module) {
  register_module(std::to_string(children().size()), std::move(module));
}

Tensor Sequential::forward(const Tensor& input) {
  Tensor x = input;
  for (const auto& [name, child] : children()) x = child->forward(x);
  return x;
}

}  // namespace sonata

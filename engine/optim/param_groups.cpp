#include "engine/optim/param_groups.h"

#include <utility>

namespace sonata {

std::vector<ParamGroup> weight_decay_groups(const Module& module, double weight_decay) {
  return weight_decay_groups(module.named_parameters(), weight_decay);
}

std::vector<ParamGroup> weight_decay_groups(const NamedTensors& parameters, double weight_decay) {
  ParamGroup decay{{}, {{"weight_decay", weight_decay}}};
  ParamGroup no_decay{{}, {{"weight_decay", 0.0}}};
  for (const auto& [name, p] : parameters) {
    if (!p.requires_grad()) continue;
    (p.dim() <= 1 ? no_decay : decay).params.push_back(p);
  }
  std::vector<ParamGroup> groups;
  if (!decay.params.empty()) groups.push_back(std::move(decay));
  if (!no_decay.params.empty()) groups.push_back(std::move(no_decay));
  return groups;
}

}  // namespace sonata

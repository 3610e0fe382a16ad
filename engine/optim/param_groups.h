#pragma once
// The usual split of a model's parameters for weight decay: convolution and linear weights
// decay; biases and normalisation parameters (every parameter of dim <= 1) do not.
#include <vector>

#include "engine/nn/module.h"
#include "engine/optim/optimizer.h"

namespace sonata {

// Group "decay" (weight_decay = `weight_decay`) then group "no decay" (weight_decay 0), in
// registration order, parameters that do not require grad left out, empty groups dropped.
std::vector<ParamGroup> weight_decay_groups(const Module& module, double weight_decay);
std::vector<ParamGroup> weight_decay_groups(const NamedTensors& parameters, double weight_decay);

}  // namespace sonata

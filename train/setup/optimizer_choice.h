#pragma once
// The optimizer and the LR schedule the options ask for: SGD, Adam or AdamW over the model's
// weight-decay groups (no decay on BatchNorm and biases unless --decay-norm-and-bias), and
// warmup, then cosine / linear / step / constant, then the flat tail.
#include <memory>

#include "engine/nn/module.h"
#include "engine/optim/lr_schedule.h"
#include "engine/optim/optimizer.h"
#include "train/strategy/state_ownership.h"
#include "train/trainer_options.h"

namespace sonata {

// Over the parameters this rank holds (`ownership`: all of them, or a pipeline stage's), the
// groups numbered as in one process.
std::unique_ptr<Optimizer> make_optimizer(const OptimizerOptions& options, Module& model, double lr,
                                          StateOwnership& ownership);

// Warmup, then the main phase, then the flat tail, over `length` schedule units.
LrSchedule make_schedule(const OptimizerOptions& options, double peak_lr, double length);

}  // namespace sonata

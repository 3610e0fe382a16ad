#include "train/option_values.h"

#include <cmath>

#include "base/error.h"

namespace sonata {
namespace {

// "--flag must be <range>, got <value>" unless `ok`; NaN and infinities are never in range.
void require(bool ok, double value, const char* flag, const char* range) {
  if (!ok || !std::isfinite(value)) throw Error(str(flag, " must be ", range, ", got ", value));
}

}  // namespace

void check_optimizer_values(const TrainerOptions& o) {
  require(o.momentum >= 0, o.momentum, "--momentum", "a number not below 0");
  require(o.beta1 >= 0 && o.beta1 < 1, o.beta1, "--beta1", "at least 0 and below 1");
  require(o.beta2 >= 0 && o.beta2 < 1, o.beta2, "--beta2", "at least 0 and below 1");
  require(o.eps >= 0, o.eps, "--eps", "a number not below 0");
  require(o.warmup >= 0, o.warmup, "--warmup", "a number not below 0 (schedule units)");
  require(o.warmup_start_lr >= 0, o.warmup_start_lr, "--warmup-start-lr", "a number not below 0");
  require(o.min_lr >= 0, o.min_lr, "--min-lr", "a number not below 0");
  require(o.flat_tail >= 0, o.flat_tail, "--flat-tail", "a number not below 0 (schedule units)");
  require(o.step_every > 0, o.step_every, "--step-every", "a positive number (schedule units)");
  require(o.step_gamma > 0, o.step_gamma, "--step-gamma", "a positive number");
  require(o.reference_batch > 0, double(o.reference_batch), "--reference-batch",
          "a positive number of items");
  require(o.grad_clip >= 0, o.grad_clip, "--grad-clip", "a number not below 0 (0: off)");
}

}  // namespace sonata

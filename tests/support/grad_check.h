#pragma once
// A reusable gradient checker: the independent truth every op and layer is held to.
// The function is evaluated in float64 on the CPU; its output is projected on a fixed random
// direction w (L = sum(out * w)), so any output shape is checked with one backward. Each
// input element is nudged by +-eps (central differences); the RNG is reseeded before every
// forward so stochastic layers (dropout) see the same masks; elements where the left and
// right slopes disagree (kinks of ReLU, Hardtanh, MaxPool ties) are skipped and counted.
#include <functional>
#include <string>
#include <vector>

#include "engine/tensor.h"

namespace sonata::testing {

struct GradCheckOptions {
  double eps = 1e-6;
  double tolerance = 1e-6;       // on |g - g_num| / max(|g|, |g_num|, 1)
  double kink_tolerance = 1e-3;  // left/right slope gap (scaled likewise) that marks a kink
  uint64_t seed = 1234;
  int max_skipped_percent = 20;  // more kinks than this and the check fails: pick better inputs
};

struct GradCheckResult {
  bool ok = true;
  double worst_error = 0;
  int64_t checked = 0, skipped = 0;
  std::string report;  // the first failures, for the test log
};

using GradFunction = std::function<Tensor(const std::vector<Tensor>&)>;

// `inputs` are CPU float64 leaves; those with requires_grad are checked.
GradCheckResult check_gradients(const GradFunction& f, const std::vector<Tensor>& inputs,
                                const GradCheckOptions& options = {});

// A float64 CPU leaf with values uniform in [low, high), seeded, requiring grad.
Tensor grad_input(const Shape& shape, uint64_t seed, double low = -1.0, double high = 1.0);

}  // namespace sonata::testing

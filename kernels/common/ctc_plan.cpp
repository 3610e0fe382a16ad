#include "kernels/common/ctc_plan.h"

#include <algorithm>

namespace sonata::kernels {

CtcRecursionPlan plan_ctc_recursions(int64_t batch, int64_t max_states, bool differentiated) {
  CtcRecursionPlan plan;
  plan.beta_in_forward = differentiated;
  plan.blocks = std::max<int64_t>(batch, 0) * (differentiated ? 2 : 1);
  const int64_t warps = (std::max<int64_t>(max_states, 1) + kCtcWarpSize - 1) / kCtcWarpSize;
  plan.threads =
      int(std::clamp<int64_t>(warps * kCtcWarpSize, kCtcWarpSize, kCtcMaxRecursionThreads));
  return plan;
}

}  // namespace sonata::kernels

// The launch plan of the CUDA CTC recursions (kernels/common/ctc_plan.h): beta beside alpha
// (2N blocks) exactly when the loss will be differentiated, and recursion blocks sized to the
// longest target's states in whole warps, capped at 512 threads.
#include <catch2/catch.hpp>

#include <cstdint>

#include "kernels/common/ctc_plan.h"

using namespace sonata::kernels;

TEST_CASE("ctc plan: training runs beta beside alpha on a second block per sample",
          "[ctc][ctc_plan]") {
  for (int64_t batch : {1, 2, 4, 64}) {
    INFO("batch " << batch);
    const CtcRecursionPlan training = plan_ctc_recursions(batch, 21, true);
    CHECK(training.beta_in_forward);
    CHECK(training.blocks == 2 * batch);
    const CtcRecursionPlan evaluation = plan_ctc_recursions(batch, 21, false);
    CHECK_FALSE(evaluation.beta_in_forward);
    CHECK(evaluation.blocks == batch);
    CHECK(training.threads == evaluation.threads);
  }
}

TEST_CASE("ctc plan: an empty batch launches nothing", "[ctc][ctc_plan]") {
  CHECK(plan_ctc_recursions(0, 1, true).blocks == 0);
  CHECK(plan_ctc_recursions(0, 1, false).blocks == 0);
}

TEST_CASE("ctc plan: recursion threads cover the states in whole warps, up to 512",
          "[ctc][ctc_plan]") {
  CHECK(plan_ctc_recursions(1, 1, true).threads == 32);   // empty targets: one state
  CHECK(plan_ctc_recursions(1, 32, true).threads == 32);  // exactly one warp
  CHECK(plan_ctc_recursions(1, 33, true).threads == 64);  // one more state: a second warp
  CHECK(plan_ctc_recursions(1, 201, true).threads == 224);
  CHECK(plan_ctc_recursions(1, 511, true).threads == 512);
  CHECK(plan_ctc_recursions(1, 512, true).threads == 512);
  // 300 labels: 601 states, more than a block; each thread then loops over two states.
  CHECK(plan_ctc_recursions(1, 601, true).threads == kCtcMaxRecursionThreads);
  CHECK(plan_ctc_recursions(1, 100001, false).threads == kCtcMaxRecursionThreads);
}

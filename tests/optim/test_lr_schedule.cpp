// LR schedules against torch's schedulers (tests/fixtures/optim, written by
// tests/fixtures/make_optim.py): LinearLR warmup -> CosineAnnealingLR -> flat, chained by
// SequentialLR, and StepLR, at every epoch; fractional positions by their closed forms.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "base/error.h"
#include "engine/ops.h"
#include "engine/optim/lr_schedule.h"
#include "engine/optim/sgd.h"
#include "tests/support/text_fixture.h"

using namespace sonata;
using namespace sonata::testing;

namespace {

constexpr double kPeak = 0.1, kFloor = 1e-4;

LrSchedule warmup_cosine_flat() {
  LrSchedule schedule(kPeak);
  schedule.warmup(5, 0.01 * kPeak).cosine(25, kFloor).constant(10);
  return schedule;
}

void check_schedule(const LrSchedule& schedule, const std::string& name) {
  INFO("fixture " << name);
  const TextFixture f =
      read_text_fixture(std::string(SONATA_FIXTURES_DIR) + "/optim/" + name + ".txt");
  const std::vector<double> positions = fixture_doubles(f, "positions");
  const std::vector<double> lrs = fixture_doubles(f, "lr");
  REQUIRE(positions.size() == lrs.size());
  for (size_t k = 0; k < lrs.size(); ++k) {
    INFO("position " << positions[k] << ": sonata " << schedule.lr(positions[k]) << ", torch "
                     << lrs[k]);
    CHECK(std::abs(schedule.lr(positions[k]) - lrs[k]) <= 1e-12 * lrs[k]);
  }
}

}  // namespace

TEST_CASE("warmup, cosine and a flat tail match torch's chained schedulers", "[optim]") {
  check_schedule(warmup_cosine_flat(), "warmup_cosine_flat");
  check_schedule(warmup_cosine_flat(), "warmup_cosine_flat_lambda");
  CHECK(warmup_cosine_flat().length() == 40);
}

TEST_CASE("step decay matches torch's StepLR", "[optim]") {
  LrSchedule schedule(0.5);
  schedule.step_decay(12, 3, 0.5);
  check_schedule(schedule, "step_decay");
}

TEST_CASE("schedules evaluate at fractional positions", "[optim]") {
  const LrSchedule schedule = warmup_cosine_flat();
  const double start = 0.01 * kPeak;
  CHECK(schedule.lr(2.5) == Approx(start + (kPeak - start) / 2).epsilon(1e-15));
  CHECK(schedule.lr(17.5) == Approx((kPeak + kFloor) / 2).epsilon(1e-15));
  CHECK(schedule.lr(-1) == start);
  CHECK(schedule.lr(35.25) == kFloor);
  CHECK(schedule.lr(1000) == kFloor);
  // Steps of a 7-step epoch: rising through the warmup, falling through the cosine.
  double previous = 0;
  for (int64_t step = 0; step <= 5 * 7; ++step) {
    const double lr = schedule.lr(epoch_position(step, 7));
    CHECK(lr > previous);
    previous = lr;
  }
  for (int64_t step = 5 * 7 + 1; step <= 30 * 7; ++step) {
    const double lr = schedule.lr(epoch_position(step, 7));
    CHECK(lr < previous);
    previous = lr;
  }
  CHECK(epoch_position(10, 4) == 2.5);
  CHECK_THROWS_WITH(epoch_position(1, 0), Catch::Contains("steps per epoch 0"));
}

TEST_CASE("phases chain from where the last one ended", "[optim]") {
  LrSchedule schedule(1.0);
  schedule.linear(2, 0.5).step_decay(4, 1, 0.5).constant(1).cosine(2, 0.0);
  CHECK(schedule.lr(1) == 0.75);
  CHECK(schedule.lr(2) == 0.5);
  CHECK(schedule.lr(3.5) == 0.25);
  CHECK(schedule.lr(6) == 0.5 * std::pow(0.5, 4));
  CHECK(schedule.lr(8) == Approx(0.5 * std::pow(0.5, 4) / 2));
  CHECK(schedule.lr(9) == 0.0);
  CHECK(LrSchedule(0.3).lr(5) == 0.3);  // no phases: constant
  CHECK_THROWS_WITH(LrSchedule(0), Catch::Contains("peak lr 0 must be positive"));
  CHECK_THROWS_WITH(LrSchedule(1).cosine(-1, 0), Catch::Contains("phase length -1"));
  CHECK_THROWS_WITH(LrSchedule(1).step_decay(5, 0, 0.1), Catch::Contains("every 0 units"));
}

TEST_CASE("a schedule sets every group's lr in proportion to its initial lr", "[optim]") {
  const Tensor a = zeros({2}, TensorOptions{}.grad()), b = zeros({2}, TensorOptions{}.grad());
  SGD sgd({ParamGroup{{a}, {}}, ParamGroup{{b}, {{"lr", 0.01}}}}, SgdOptions{.lr = kPeak});
  const LrSchedule schedule = warmup_cosine_flat();
  schedule.apply(sgd, 17.5);
  CHECK(sgd.lr(0) == Approx((kPeak + kFloor) / 2));
  CHECK(sgd.lr(1) == Approx((kPeak + kFloor) / 2 / 10));
  // Pure in the position: going back gives the same values as going there first.
  schedule.apply(sgd, 3);
  const double lr_at_3 = sgd.lr(0);
  schedule.apply(sgd, 30);
  schedule.apply(sgd, 3);
  CHECK(sgd.lr(0) == lr_at_3);
}

TEST_CASE("the batch-size scaling rules", "[optim]") {
  CHECK(scale_lr(0.1, 1024, 256, LrScalingRule::linear) == Approx(0.4));
  CHECK(scale_lr(0.1, 1024, 256, LrScalingRule::sqrt) == Approx(0.2));
  CHECK(scale_lr(0.1, 1024, 256, LrScalingRule::none) == 0.1);
  CHECK(parse_lr_scaling_rule("sqrt") == LrScalingRule::sqrt);
  CHECK_THROWS_WITH(parse_lr_scaling_rule("cubic"), Catch::Contains("'cubic'"));
  CHECK_THROWS_WITH(scale_lr(0.1, 0, 256, LrScalingRule::linear),
                    Catch::Contains("batch sizes 0 and 256"));
}

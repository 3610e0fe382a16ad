// LossScaler against torch.cuda.amp.GradScaler's semantics (PyTorch 1.13), written out by
// hand: unscaling multiplies by an f32 1/scale, any inf/NaN skips the step and halves the
// scale, the scale doubles after exactly growth_interval clean steps, and the state dict
// resumes all of it.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "base/error.h"
#include "engine/amp/loss_scaler.h"
#include "engine/ops.h"
#include "engine/optim/sgd.h"
#include "engine/random.h"

using namespace sonata;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

Tensor leaf_with_grad(const std::vector<double>& grad, DType dtype) {
  Tensor p = zeros({int64_t(grad.size())}, TensorOptions{}.with(dtype).grad());
  p.set_grad(from_vector(grad, {int64_t(grad.size())}, TensorOptions{}.with(dtype)));
  return p;
}

std::vector<double> values(int64_t n, uint64_t seed) {
  Generator generator(seed);
  return randn({n}, TensorOptions{}.with(DType::f64), &generator).to_vector<double>();
}

LossScalerOptions options(double init_scale, int64_t interval) {
  return LossScalerOptions{.init_scale = init_scale, .growth_interval = interval};
}

}  // namespace

TEST_CASE("unscale_ divides f64, f32 and f16 gradients by the scale exactly", "[optim][amp]") {
  LossScaler scaler(Device::cpu(), options(1024, 2000));
  const std::vector<double> a = values(5, 1), b = values(70001, 2);
  // Halves hold few values: these and their 1024ths are all exact.
  const std::vector<double> c = {-2048, 3, 0.5, 65504, -0.0};
  Tensor pa = leaf_with_grad(a, DType::f64), pb = leaf_with_grad(b, DType::f32);
  Tensor pc = leaf_with_grad(c, DType::f16);
  Tensor no_grad = zeros({3}, TensorOptions{}.grad());
  const std::vector<double> b_f32 = pb.grad().to_vector<double>();

  scaler.unscale_({pa, no_grad, pb, pc});
  const std::vector<double> ga = pa.grad().to_vector<double>();
  const std::vector<double> gb = pb.grad().to_vector<double>();
  const std::vector<double> gc = pc.grad().to_vector<double>();
  for (size_t i = 0; i < a.size(); ++i) CHECK(ga[i] == a[i] / 1024);
  for (size_t i = 0; i < b.size(); i += 7) CHECK(gb[i] == b_f32[i] / 1024);
  for (size_t i = 0; i < c.size(); ++i) CHECK(gc[i] == c[i] / 1024);
  CHECK(!no_grad.grad().defined());
  CHECK_FALSE(scaler.found_inf_value());
}

TEST_CASE("unscale_ multiplies by 1/scale rounded to f32, as torch's inv_scale", "[optim][amp]") {
  // torch: inv_scale = scale.double().reciprocal().float(), then grad * inv_scale in the
  // gradient's compute type (double for f64).
  LossScaler scaler(Device::cpu(), options(3, 2000));
  const std::vector<double> a = values(9, 3);
  Tensor p = leaf_with_grad(a, DType::f64);
  scaler.unscale_({p});
  const double inv_scale = double(float(1.0 / 3.0));
  const std::vector<double> got = p.grad().to_vector<double>();
  for (size_t i = 0; i < a.size(); ++i) CHECK(got[i] == a[i] * inv_scale);
}

TEST_CASE("an inf or NaN anywhere raises found_inf, halves the scale and resets the tracker",
          "[optim][amp]") {
  const std::vector<int64_t> sizes = {4, 70001, 9};
  for (size_t bad_tensor = 0; bad_tensor < sizes.size(); ++bad_tensor) {
    const int64_t n = sizes[bad_tensor];
    for (int64_t position : {int64_t(0), n / 2, n - 1}) {
      for (double bad : {kInf, -kInf, kNaN}) {
        INFO("tensor " << bad_tensor << " element " << position << " value " << bad);
        LossScaler scaler(Device::cpu(), options(4096, 5));
        // One clean step first, so that the reset of the tracker shows.
        std::vector<Tensor> params;
        for (size_t t = 0; t < sizes.size(); ++t)
          params.push_back(leaf_with_grad(values(sizes[t], 10 + t), DType::f32));
        scaler.unscale_(params);
        scaler.update();
        REQUIRE(scaler.growth_tracker_value() == 1);
        REQUIRE(scaler.scale_value() == 4096);

        params.clear();
        for (size_t t = 0; t < sizes.size(); ++t) {
          std::vector<double> grad = values(sizes[t], 20 + t);
          if (t == bad_tensor) grad[size_t(position)] = bad;
          params.push_back(leaf_with_grad(grad, DType::f32));
        }
        scaler.unscale_(params);
        CHECK(scaler.found_inf_value());
        // The other elements are unscaled all the same, as torch does.
        const std::vector<double> first = params[0].grad().to_vector<double>();
        const std::vector<double> first_in = values(sizes[0], 20);
        CHECK(first[1] == double(float(first_in[1])) / 4096);
        scaler.update();
        CHECK(scaler.scale_value() == 2048);
        CHECK(scaler.growth_tracker_value() == 0);
        CHECK_FALSE(scaler.found_inf_value());
      }
    }
  }
}

TEST_CASE("the scale grows after exactly growth_interval clean steps", "[optim][amp]") {
  LossScaler scaler(Device::cpu(), options(8, 3));
  Tensor p = leaf_with_grad({1, 2}, DType::f32);
  auto clean_step = [&] {
    p.set_grad(from_vector(std::vector<float>{1, 2}, {2}));
    (void)scaler.step_scaling({p});
    scaler.update();
  };
  // scale, tracker after each update: 8,1  8,2  16,0  16,1  16,2  32,0
  const double expected_scale[] = {8, 8, 16, 16, 16, 32};
  const int64_t expected_tracker[] = {1, 2, 0, 1, 2, 0};
  for (int s = 0; s < 6; ++s) {
    INFO("update " << s + 1);
    clean_step();
    CHECK(scaler.scale_value() == expected_scale[s]);
    CHECK(scaler.growth_tracker_value() == expected_tracker[s]);
  }
  // An overflow two steps into a count starts it again.
  clean_step();
  clean_step();
  p.set_grad(from_vector(std::vector<float>{1, INFINITY}, {2}));
  (void)scaler.step_scaling({p});
  scaler.update();
  CHECK(scaler.scale_value() == 16);
  clean_step();
  clean_step();
  CHECK(scaler.scale_value() == 16);
  clean_step();
  CHECK(scaler.scale_value() == 32);
}

TEST_CASE("the scale does not grow past the f32 range", "[optim][amp]") {
  const double top = std::ldexp(1.0, 127);
  LossScaler scaler(Device::cpu(), options(top, 1));
  Tensor p = leaf_with_grad({1}, DType::f32);
  scaler.unscale_({p});
  scaler.update();
  CHECK(scaler.scale_value() == top);
  CHECK(scaler.growth_tracker_value() == 0);
}

TEST_CASE("a scaled training step is skipped on overflow and applied otherwise", "[optim][amp]") {
  // loss = sum(w * x): dloss/dw = x, so the scaled gradient is x * scale and the SGD step
  // w - lr * x. x = 1e38 overflows f32 once scaled by 65536.
  for (bool explicit_unscale : {false, true}) {
    INFO((explicit_unscale ? "unscale_ then step" : "the optimizer unscales as it reads"));
    const std::vector<float> w0 = {0.5f, -1.25f, 2.0f, 3.0f};
    Tensor w = from_vector(w0, {4}).set_requires_grad(true);
    SGD sgd({w}, SgdOptions{.lr = 0.125});
    LossScaler scaler(Device::cpu());
    auto step = [&](const std::vector<float>& x) {
      sgd.zero_grad();
      Tensor loss = sum(mul(w, from_vector(x, {4})));
      Tensor scaled = scaler.scale(loss);
      CHECK(scaled.item() == double(float(loss.item() * scaler.scale_value())));
      scaled.backward();
      if (explicit_unscale) scaler.unscale_({w});
      sgd.step(scaler.step_scaling({w}));
      const bool skipped = scaler.found_inf_value();
      scaler.update();
      return skipped;
    };

    const std::vector<float> x1 = {1, 2, -4, 0.25f};
    CHECK_FALSE(step(x1));
    std::vector<float> w1 = w.to_vector<float>();
    for (size_t i = 0; i < 4; ++i)
      CHECK(double(w1[i]) == Approx(double(w0[i]) - 0.125 * double(x1[i])).epsilon(1e-7));
    CHECK(scaler.scale_value() == 65536);

    CHECK(step({1, 1e38f, 1, 1}));
    CHECK(w.to_vector<float>() == w1);
    CHECK(scaler.scale_value() == 32768);

    const std::vector<float> x3 = {0.5f, 0.5f, 0.5f, 0.5f};
    CHECK_FALSE(step(x3));
    const std::vector<float> w3 = w.to_vector<float>();
    for (size_t i = 0; i < 4; ++i)
      CHECK(double(w3[i]) == Approx(double(w1[i]) - 0.125 * 0.5).epsilon(1e-7));
  }
}

TEST_CASE("the loss scaler's state dict resumes scale and tracker", "[optim][amp]") {
  LossScaler a(
      Device::cpu(),
      LossScalerOptions{
          .init_scale = 1024, .growth_factor = 4, .backoff_factor = 0.25, .growth_interval = 3});
  Tensor p = leaf_with_grad({1}, DType::f32);
  auto step = [&](LossScaler& scaler, float grad) {
    p.set_grad(from_vector(std::vector<float>{grad}, {1}));
    (void)scaler.step_scaling({p});
    scaler.update();
  };
  step(a, INFINITY);  // 256, 0
  step(a, 1);         // 256, 1
  step(a, 1);         // 256, 2
  const std::map<std::string, double> state = a.state_dict();
  CHECK(state == std::map<std::string, double>{{"scale", 256},
                                               {"growth_factor", 4},
                                               {"backoff_factor", 0.25},
                                               {"growth_interval", 3},
                                               {"growth_tracker", 2}});
  LossScaler b(Device::cpu());
  b.load_state_dict(state);
  CHECK(b.state_dict() == state);
  step(b, 1);
  CHECK(b.scale_value() == 1024);  // the third clean step grows by 4
  CHECK(b.growth_tracker_value() == 0);
  step(b, NAN);
  CHECK(b.scale_value() == 256);  // and backs off by 0.25
}

TEST_CASE("a loss scaler state with bad keys or values is refused in one error", "[optim][amp]") {
  LossScaler scaler(Device::cpu(), options(512, 7));
  std::map<std::string, double> state = scaler.state_dict();
  state.erase("scale");
  state.erase("growth_tracker");
  state["_growth_tracker"] = 0;
  try {
    scaler.load_state_dict(state);
    FAIL("no error");
  } catch (const Error& e) {
    const std::string message = e.what();
    CHECK_THAT(message, Catch::Contains("'scale' is missing"));
    CHECK_THAT(message, Catch::Contains("'growth_tracker' is missing"));
    CHECK_THAT(message, Catch::Contains("'_growth_tracker' is not a loss scaler entry"));
  }
  state = scaler.state_dict();
  state["scale"] = -1;
  state["growth_interval"] = 2.5;
  state["backoff_factor"] = 1.5;
  try {
    scaler.load_state_dict(state);
    FAIL("no error");
  } catch (const Error& e) {
    const std::string message = e.what();
    CHECK_THAT(message, Catch::Contains("scale -1 is not a positive finite number"));
    CHECK_THAT(message, Catch::Contains("growth_interval 2.5 is not a whole number"));
    CHECK_THAT(message, Catch::Contains("backoff_factor 1.5 is not in (0, 1]"));
  }
  CHECK_THROWS_WITH(scaler.load_state_dict({}), Catch::Contains("the state is empty"));
  // Nothing changed.
  CHECK(scaler.scale_value() == 512);
  CHECK(scaler.state_dict().at("growth_interval") == 7);
}

TEST_CASE("the loss scaler refuses calls out of order and bad options", "[optim][amp]") {
  LossScaler scaler(Device::cpu());
  Tensor p = leaf_with_grad({1, 2}, DType::f32);
  CHECK_THROWS_WITH(scaler.update(), Catch::Contains("no inf/NaN check since the last update"));
  scaler.unscale_({p});
  CHECK_THROWS_WITH(scaler.unscale_({p}), Catch::Contains("already called"));
  (void)scaler.step_scaling({p});
  CHECK_THROWS_WITH(scaler.step_scaling({p}), Catch::Contains("already called"));
  CHECK_THROWS_WITH(scaler.unscale_({p}), Catch::Contains("called after step_scaling"));
  scaler.update();
  scaler.unscale_({p});  // a new step

  CHECK_THROWS_WITH(LossScaler(Device::cpu(), LossScalerOptions{.growth_factor = 0.5}),
                    Catch::Contains("growth_factor 0.5 is not >= 1"));
  CHECK_THROWS_WITH(LossScaler(Device::cpu(), LossScalerOptions{.backoff_factor = 1.5}),
                    Catch::Contains("backoff_factor 1.5 is not in (0, 1]"));
  CHECK_THROWS_WITH(LossScaler(Device::cpu(), LossScalerOptions{.growth_interval = 0}),
                    Catch::Contains("growth_interval 0"));
  CHECK_THROWS_WITH(LossScaler(Device::cpu(), LossScalerOptions{.init_scale = 0}),
                    Catch::Contains("scale 0 is not a positive"));
  Tensor ints = zeros({2}, TensorOptions{}.with(DType::i64));
  CHECK_THROWS_WITH(scaler.scale(ints), Catch::Contains("the loss is i64"));
}

TEST_CASE("a fixed-scale loss scaler only guards: NaN steps skipped, the scale stays 1",
          "[optim][amp]") {
  LossScaler scaler(
      Device::cpu(),
      LossScalerOptions{
          .init_scale = 1.0, .growth_factor = 1.0, .backoff_factor = 1.0, .growth_interval = 2});
  Tensor w = full({3}, 2.0).set_requires_grad(true);
  SGD sgd({w}, SgdOptions{.lr = 0.5});
  for (const double x : {1.0, std::nan(""), 1.0, 1.0, 1.0}) {
    const Tensor loss = sum(w * full({3}, x));
    scaler.scale(loss).backward();
    scaler.unscale_({w});
    sgd.step(scaler.step_scaling({w}));
    scaler.update();
    sgd.zero_grad();
    CHECK(scaler.scale_value() == 1.0);
  }
  // Four clean steps of lr 0.5 on a gradient of 1; the NaN step changed nothing.
  CHECK(w.to_vector<float>() == std::vector<float>(3, 0.0f));
}

TEST_CASE("a disabled loss scaler changes nothing", "[optim][amp]") {
  LossScaler scaler(Device::cpu(), LossScalerOptions{.enabled = false});
  CHECK_FALSE(scaler.enabled());
  Tensor p = leaf_with_grad({3, INFINITY}, DType::f32);
  const Tensor loss = full({}, 2.5);
  CHECK(scaler.scale(loss).same(loss));
  scaler.unscale_({p});
  scaler.unscale_({p});
  CHECK(p.grad().to_vector<float>() == std::vector<float>{3, INFINITY});
  const StepScaling scaling = scaler.step_scaling({p});
  CHECK(!scaling.inv_scale.defined());
  CHECK(!scaling.found_inf.defined());
  scaler.update();
  CHECK(scaler.scale_value() == 1);
  CHECK_FALSE(scaler.found_inf_value());
  CHECK(scaler.state_dict().empty());
  scaler.load_state_dict({{"scale", 8}});  // ignored, as torch's
}

TEST_CASE("step_scaling without unscale_ checks the gradients and leaves them scaled",
          "[optim][amp]") {
  LossScaler scaler(Device::cpu(), options(16, 2000));
  Tensor p = leaf_with_grad({32, -NAN}, DType::f32);
  Tensor q = leaf_with_grad({48}, DType::f64);
  const StepScaling scaling = scaler.step_scaling({p, q});
  CHECK(scaling.inv_scale.item() == 1.0 / 16);
  CHECK(scaling.found_inf.item() == 1);
  CHECK(p.grad().to_vector<float>()[0] == 32);
  CHECK(q.grad().item() == 48);
}

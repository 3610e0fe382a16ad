// SGD, Adam and AdamW against torch.optim (tests/fixtures/optim, written by
// tests/fixtures/make_optim.py): every parameter after every step and the final state, f64
// within 1e-12 and f32 within 1e-6 (relative, scaled by max(|expected|, 1)). Then the state
// dict: a resume from a checkpoint continues bitwise as the uninterrupted run; and every
// configuration of tests/cases/optim_cases.h against the update written with tensor ops.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "base/error.h"
#include "engine/io/safetensors.h"
#include "engine/nn/module.h"
#include "engine/ops.h"
#include "engine/optim/adamw.h"
#include "engine/optim/param_groups.h"
#include "engine/optim/sgd.h"
#include "engine/random.h"
#include "tests/cases/optim_cases.h"
#include "tests/support/text_fixture.h"

using namespace sonata;
using namespace sonata::testing;

namespace {

std::string fixture_path(const std::string& name) {
  return std::string(SONATA_FIXTURES_DIR) + "/optim/" + name + ".txt";
}

// One torch run: its parameters (fresh leaves at their initial values) and groups.
struct OptimCase {
  TextFixture fixture;
  DType dtype = DType::f64;
  int steps = 0;
  std::vector<Tensor> params;
  std::vector<ParamGroup> groups;
};

Shape fixture_shape(const TextFixture& fixture, const std::string& key) {
  Shape shape;
  for (double d : fixture_doubles(fixture, key)) shape.push_back(int64_t(d));
  return shape;
}

Tensor fixture_tensor(const TextFixture& fixture, const std::string& key, const Shape& shape,
                      DType dtype) {
  return from_vector(fixture_doubles(fixture, key), shape, TensorOptions{}.with(DType::f64))
      .to(dtype);
}

OptimCase load_case(const std::string& name) {
  OptimCase c;
  c.fixture = read_text_fixture(fixture_path(name));
  const TextFixture& f = c.fixture;
  c.dtype = f.at("dtype")[0] == "f64" ? DType::f64 : DType::f32;
  c.steps = std::stoi(f.at("steps")[0]);
  const int param_count = std::stoi(f.at("params")[0]);
  for (int i = 0; i < param_count; ++i) {
    const std::string key = "param." + std::to_string(i);
    Tensor p = fixture_tensor(f, key + ".initial", fixture_shape(f, key + ".shape"), c.dtype);
    c.params.push_back(p.set_requires_grad(true));
  }
  const int group_count = std::stoi(f.at("groups")[0]);
  for (int g = 0; g < group_count; ++g) {
    const std::string prefix = "group." + std::to_string(g) + ".";
    ParamGroup group;
    for (double i : fixture_doubles(f, prefix + "params"))
      group.params.push_back(c.params[size_t(i)]);
    for (const auto& [key, values] : f)
      if (key.rfind(prefix, 0) == 0 && key != prefix + "params")
        group.options[key.substr(prefix.size())] = std::stod(values[0]);
    c.groups.push_back(group);
  }
  return c;
}

std::unique_ptr<Optimizer> make_optimizer(const std::string& kind, std::vector<ParamGroup> groups) {
  if (kind == "sgd") return std::make_unique<SGD>(std::move(groups), SgdOptions{});
  if (kind == "adam") return std::make_unique<Adam>(std::move(groups), AdamOptions{});
  return std::make_unique<AdamW>(std::move(groups), AdamOptions{});
}

// Sets the gradients torch used at `step` (none where it had none).
void set_fixture_grads(const OptimCase& c, int step) {
  for (size_t i = 0; i < c.params.size(); ++i) {
    const std::string key = "grad." + std::to_string(step) + "." + std::to_string(i);
    Tensor p = c.params[i];
    p.set_grad(c.fixture.count(key) ? fixture_tensor(c.fixture, key, p.shape(), c.dtype)
                                    : Tensor());
  }
}

void require_close(const Tensor& actual, const std::vector<double>& expected, double rtol,
                   const std::string& what) {
  const std::vector<double> got = actual.to_vector<double>();
  REQUIRE(got.size() == expected.size());
  for (size_t k = 0; k < got.size(); ++k) {
    INFO(what << " element " << k << ": sonata " << got[k] << ", torch " << expected[k]);
    REQUIRE(std::abs(got[k] - expected[k]) <= rtol * std::max(std::abs(expected[k]), 1.0));
  }
}

const Tensor& state_tensor(const OptimizerState& state, const std::string& name) {
  for (const auto& [key, tensor] : state.tensors)
    if (key == name) return tensor;
  FAIL("no state tensor " << name);
  static const Tensor none;
  return none;
}

// Runs the whole case and checks it step by step against torch.
void check_against_torch(const std::string& name) {
  INFO("case " << name);
  OptimCase c = load_case(name);
  const double rtol = c.dtype == DType::f64 ? 1e-12 : 1e-6;
  auto optimizer = make_optimizer(c.fixture.at("optimizer")[0], c.groups);
  for (int s = 1; s <= c.steps; ++s) {
    set_fixture_grads(c, s);
    optimizer->step();
    for (size_t i = 0; i < c.params.size(); ++i) {
      const std::string key = "param." + std::to_string(i) + ".after." + std::to_string(s);
      require_close(c.params[i], fixture_doubles(c.fixture, key), rtol, key);
    }
  }
  // The fixture numbers parameters by creation, the state dict group by group.
  std::vector<size_t> state_index(c.params.size());
  size_t position = 0;
  for (const ParamGroup& group : c.groups)
    for (const Tensor& p : group.params)
      for (size_t i = 0; i < c.params.size(); ++i)
        if (p.same(c.params[i])) state_index[i] = position++;
  const OptimizerState state = optimizer->state_dict();
  for (const auto& [key, values] : c.fixture) {
    if (key.rfind("state.", 0) != 0) continue;
    INFO(key);
    const size_t dot = key.find('.', 6);
    const std::string name = "state." +
                             std::to_string(state_index[std::stoul(key.substr(6, dot - 6))]) +
                             key.substr(dot);
    if (name.substr(name.size() - 5) == ".step") {
      REQUIRE(state.scalars.count(name));
      CHECK(state.scalars.at(name) == std::stod(values[0]));
    } else {
      require_close(state_tensor(state, name), fixture_doubles(c.fixture, key), rtol, key);
    }
  }
}

std::string temp_path(const std::string& name) {
  return std::string("/tmp/sonata_test_") + std::to_string(::getpid()) + "_" + name;
}

// A checkpoint as the trainer will write one: tensors in safetensors, scalars as metadata
// printed with round-trip precision.
OptimizerState through_safetensors(const OptimizerState& state, const std::string& name) {
  Metadata metadata;
  for (const auto& [key, value] : state.scalars) {
    char text[32];
    std::snprintf(text, sizeof(text), "%.17g", value);
    metadata[key] = text;
  }
  const std::string path = temp_path(name);
  save_safetensors(path, state.tensors, metadata);
  const SafetensorsContents contents = load_safetensors(path);
  std::remove(path.c_str());
  OptimizerState back;
  back.tensors = contents.tensors;
  for (const auto& [key, text] : contents.metadata) back.scalars[key] = std::stod(text);
  return back;
}

std::vector<Tensor> fresh_copies(const std::vector<Tensor>& params) {
  std::vector<Tensor> out;
  for (const Tensor& p : params) out.push_back(p.detach().clone().set_requires_grad(true));
  return out;
}

std::vector<ParamGroup> regroup(const std::vector<ParamGroup>& groups,
                                const std::vector<Tensor>& old_params,
                                const std::vector<Tensor>& new_params) {
  std::vector<ParamGroup> out = groups;
  for (ParamGroup& group : out)
    for (Tensor& p : group.params)
      for (size_t i = 0; i < old_params.size(); ++i)
        if (p.same(old_params[i])) p = new_params[i];
  return out;
}

void require_bitwise(const Tensor& a, const Tensor& b, const std::string& what) {
  INFO(what);
  REQUIRE(a.shape() == b.shape());
  REQUIRE(a.to_vector<double>() == b.to_vector<double>());
}

// Steps 1..k, a checkpoint, a fresh optimizer on fresh parameters loaded from it, and
// steps k+1..S on both: the two must agree bit for bit, parameters and state.
void check_resume(const std::string& name, int k) {
  INFO("case " << name << ", checkpoint after step " << k);
  OptimCase c = load_case(name);
  const std::string kind = c.fixture.at("optimizer")[0];
  auto straight = make_optimizer(kind, c.groups);
  for (int s = 1; s <= k; ++s) {
    set_fixture_grads(c, s);
    straight->step();
  }
  const OptimizerState checkpoint = through_safetensors(straight->state_dict(), name);
  const std::vector<Tensor> resumed_params = fresh_copies(c.params);
  auto resumed = make_optimizer(kind, regroup(c.groups, c.params, resumed_params));
  resumed->load_state_dict(checkpoint);
  for (int s = k + 1; s <= c.steps; ++s) {
    set_fixture_grads(c, s);
    straight->step();
    for (size_t i = 0; i < c.params.size(); ++i) {
      Tensor p = resumed_params[i];
      p.set_grad(c.params[i].grad());
    }
    resumed->step();
  }
  for (size_t i = 0; i < c.params.size(); ++i)
    require_bitwise(resumed_params[i], c.params[i], "parameter " + std::to_string(i));
  const OptimizerState a = straight->state_dict(), b = resumed->state_dict();
  CHECK(a.scalars == b.scalars);
  REQUIRE(a.tensors.size() == b.tensors.size());
  for (size_t t = 0; t < a.tensors.size(); ++t) {
    CHECK(a.tensors[t].first == b.tensors[t].first);
    require_bitwise(a.tensors[t].second, b.tensors[t].second, a.tensors[t].first);
  }
}

}  // namespace

TEST_CASE("SGD matches torch.optim.SGD", "[optim]") {
  for (const char* name :
       {"sgd_nesterov_f64", "sgd_nesterov_f32", "sgd_dampening_f64", "sgd_groups_f64"})
    check_against_torch(name);
}

TEST_CASE("Adam and AdamW match torch.optim", "[optim]") {
  for (const char* name : {"adamw_f64", "adamw_f32", "adam_l2_f64", "adamw_amsgrad_groups_f64"})
    check_against_torch(name);
}

TEST_CASE("a resume from the state dict continues bitwise", "[optim]") {
  for (const char* name :
       {"sgd_nesterov_f64", "sgd_groups_f64", "adamw_amsgrad_groups_f64", "adamw_f32"})
    for (int k : {1, 2, 4}) check_resume(name, k);
}

TEST_CASE("the state dict names state and hyper-parameters as torch does", "[optim]") {
  OptimCase c = load_case("adamw_amsgrad_groups_f64");
  auto optimizer = make_optimizer("adamw", c.groups);
  set_fixture_grads(c, 1);
  optimizer->step();
  const OptimizerState state = optimizer->state_dict();
  for (const char* name : {"state.0.exp_avg", "state.1.exp_avg_sq", "state.2.max_exp_avg_sq"})
    CHECK(state_tensor(state, name).defined());
  CHECK(state.scalars.at("state.2.step") == 1);
  CHECK(state.scalars.at("param_groups.0.params") == 2);
  CHECK(state.scalars.at("param_groups.1.params") == 1);
  CHECK(state.scalars.at("param_groups.1.lr") == 0.003);
  CHECK(state.scalars.at("param_groups.1.beta1") == 0.5);
  CHECK(state.scalars.at("param_groups.0.amsgrad") == 1);
  CHECK(state.scalars.at("param_groups.0.initial_lr") == 0.01);
}

TEST_CASE("a state dict that does not fit is refused with every difference named", "[optim]") {
  OptimCase c = load_case("sgd_nesterov_f64");
  SGD sgd(c.groups, SgdOptions{});
  set_fixture_grads(c, 1);
  sgd.step();
  const OptimizerState good = sgd.state_dict();
  const std::vector<double> before = c.params[0].to_vector<double>();

  OptimizerState bad = good;
  bad.tensors[0].second = zeros({7});
  bad.scalars["param_groups.0.params"] = 2;
  bad.scalars["param_groups.0.betas"] = 0.9;
  bad.scalars.erase("param_groups.0.momentum");
  try {
    sgd.load_state_dict(bad);
    FAIL("load_state_dict accepted a state that does not fit");
  } catch (const Error& error) {
    const std::string message = error.what();
    CHECK_THAT(message, Catch::Contains("state.0.momentum_buffer has shape [7]"));
    CHECK_THAT(message, Catch::Contains("group 0 has 3 parameters here but 2"));
    CHECK_THAT(message, Catch::Contains("'betas' is not an option of SGD"));
    CHECK_THAT(message, Catch::Contains("param_groups.0.momentum is missing"));
  }
  // Nothing changed: the next step is the one the good state gives.
  CHECK(sgd.state_dict().scalars == good.scalars);
  CHECK(c.params[0].to_vector<double>() == before);

  Adam adam(c.params, AdamOptions{});
  CHECK_THROWS_WITH(adam.load_state_dict(good), Catch::Contains("is not state of Adam"));
}

TEST_CASE("optimizer options are checked and overridable per group", "[optim]") {
  const Tensor w = zeros({2, 2}, TensorOptions{}.grad());
  const Tensor b = zeros({2}, TensorOptions{}.grad());
  CHECK_THROWS_WITH(SGD({w}, SgdOptions{.lr = 0.1, .nesterov = true}),
                    Catch::Contains("Nesterov momentum needs a momentum > 0"));
  CHECK_THROWS_WITH(SGD({w}, SgdOptions{.lr = -1}), Catch::Contains("learning rate -1 < 0"));
  CHECK_THROWS_WITH(AdamW({w}, AdamOptions{.beta2 = 1.0}), Catch::Contains("beta2 1 outside"));
  CHECK_THROWS_WITH(SGD({ParamGroup{{w}, {{"betas", 0.9}}}}, SgdOptions{}),
                    Catch::Contains("'betas', which is not an option of SGD"));
  CHECK_THROWS_WITH(SGD({ParamGroup{{w}, {}}, ParamGroup{{w}, {}}}, SgdOptions{}),
                    Catch::Contains("appears more than once"));
  CHECK_THROWS_WITH(SGD(std::vector<Tensor>{}, SgdOptions{}),
                    Catch::Contains("empty parameter list"));

  SGD sgd({ParamGroup{{w}, {}}, ParamGroup{{b}, {{"lr", 0.5}, {"weight_decay", 0.0}}}},
          SgdOptions{.lr = 0.1, .momentum = 0.9, .weight_decay = 1e-4});
  CHECK(sgd.lr(0) == 0.1);
  CHECK(sgd.lr(1) == 0.5);
  CHECK(sgd.initial_lr(1) == 0.5);
  CHECK(sgd.option(1, "momentum") == 0.9);
  CHECK(sgd.option(1, "weight_decay") == 0.0);
  sgd.set_lr(1, 0.25);
  CHECK(sgd.lr(1) == 0.25);
  CHECK(sgd.initial_lr(1) == 0.5);
  CHECK_THROWS_WITH(sgd.set_lr(0, -0.1), Catch::Contains("learning rate -0.1 < 0"));
  CHECK(sgd.lr(0) == 0.1);
  CHECK_THROWS_WITH(sgd.option(2, "lr"), Catch::Contains("no parameter group 2"));
}

TEST_CASE("zero_grad drops or zeroes gradients", "[optim]") {
  Tensor w = zeros({3}, TensorOptions{}.grad());
  SGD sgd({w}, SgdOptions{});
  w.set_grad(ones({3}));
  sgd.zero_grad(false);
  REQUIRE(w.grad().defined());
  CHECK(w.grad().to_vector<double>() == std::vector<double>{0, 0, 0});
  sgd.zero_grad();
  CHECK(!w.grad().defined());
  sgd.step();  // no gradients: nothing moves, nothing is created
  CHECK(sgd.state_dict().tensors.empty());
}

TEST_CASE("the scaler's hook unscales gradients and skips steps on the CPU", "[optim]") {
  manual_seed(5);
  const Tensor start = randn({257});
  const Tensor grad = randn({257});
  auto run = [&](double grad_factor, const StepScaling& scaling) {
    Tensor p = start.clone().set_requires_grad(true);
    AdamW adamw({p}, AdamOptions{.lr = 0.01, .weight_decay = 0.1});
    for (int s = 0; s < 3; ++s) {
      p.set_grad(mul(grad, grad_factor));
      adamw.step(scaling);
    }
    return p.to_vector<float>();
  };
  const std::vector<float> plain = run(1, {});
  // Powers of two: scaling and unscaling are exact, so the steps are too.
  CHECK(run(8, {full({1}, 0.125), Tensor()}) == plain);
  CHECK(run(8, {full({1}, 0.125), zeros({1})}) == plain);
  CHECK(run(1, {Tensor(), ones({1})}) == start.to_vector<float>());
  Tensor p = start.clone().set_requires_grad(true);
  p.set_grad(grad);
  SGD sgd({p}, SgdOptions{});
  CHECK_THROWS_WITH(sgd.step({full({1}, 1.0, TensorOptions{}.with(DType::f64)), Tensor()}),
                    Catch::Contains("inv_scale must be one f32 element"));
}

namespace {

// One step of `c` written with tensor ops in torch's order; `state` holds the buffers it
// keeps (SGD's momentum; Adam's m, v and the running max of v).
struct ReferenceState {
  Tensor buf, m, v, v_max;
};

Tensor reference_step(const OptimizerCase& c, const Tensor& p, const Tensor& g,
                      ReferenceState& state, int step) {
  if (c.kind == OptimizerCase::Kind::sgd) {
    const SgdOptions& o = c.sgd;
    Tensor d = o.weight_decay != 0 ? add(g, mul(p, o.weight_decay)) : g;
    if (o.momentum != 0) {
      state.buf = step == 1 ? d : add(mul(state.buf, o.momentum), mul(d, 1 - o.dampening));
      d = o.nesterov ? add(d, mul(state.buf, o.momentum)) : state.buf;
    }
    return add(p, mul(d, -o.lr));
  }
  const AdamOptions& o = c.adam;
  const bool decoupled = c.kind == OptimizerCase::Kind::adamw;
  Tensor x = decoupled ? mul(p, 1 - o.lr * o.weight_decay) : p;
  const Tensor d = !decoupled && o.weight_decay != 0 ? add(g, mul(p, o.weight_decay)) : g;
  state.m = step == 1 ? mul(d, 1 - o.beta1) : add(mul(state.m, o.beta1), mul(d, 1 - o.beta1));
  const Tensor d2 = mul(mul(d, d), 1 - o.beta2);
  state.v = step == 1 ? d2 : add(mul(state.v, o.beta2), d2);
  Tensor second = state.v;
  if (o.amsgrad) {
    state.v_max = step == 1 ? state.v : maximum(state.v_max, state.v);
    second = state.v_max;
  }
  const double bias1 = 1 - std::pow(o.beta1, step), bias2 = 1 - std::pow(o.beta2, step);
  const Tensor denom = add(mul(sqrt(second), 1 / std::sqrt(bias2)), o.eps);
  return add(x, mul(div(state.m, denom), -o.lr / bias1));
}

}  // namespace

TEST_CASE("large parameters take the parallel path and match a composition of ops", "[optim]") {
  // Above the OpenMP grain, every configuration of the table; the reference is the update
  // written with tensor ops, in torch's order.
  for (const OptimizerCase& c : optimizer_cases()) {
    INFO(c.name);
    manual_seed(11);
    const int64_t n = 100003;
    const Tensor start = randn({n}, TensorOptions{}.with(DType::f64));
    Tensor p = start.clone().set_requires_grad(true);
    auto optimizer = c.make({p});
    Tensor expected = start.clone();
    ReferenceState state;
    for (int s = 1; s <= c.steps; ++s) {
      const Tensor g = randn({n}, TensorOptions{}.with(DType::f64));
      p.set_grad(g);
      optimizer->step();
      expected = reference_step(c, expected, g, state, s);
    }
    const std::vector<double> got = p.to_vector<double>(), want = expected.to_vector<double>();
    for (int64_t i = 0; i < n; ++i) REQUIRE(std::abs(got[size_t(i)] - want[size_t(i)]) <= 1e-14);
  }
}

TEST_CASE("half-precision parameters are refused on the CPU with a reason", "[optim]") {
  Tensor p = zeros({4}, TensorOptions{}.with(DType::f16).grad());
  p.set_grad(zeros({4}, TensorOptions{}.with(DType::f16)));
  SGD sgd({p}, SgdOptions{});
  CHECK_THROWS_WITH(sgd.step(), Catch::Contains("half-precision parameters train on CUDA"));
}

namespace {
// Parameters of the given shapes, named "weight" and "bias" as layers name them.
class Layer : public Module {
 public:
  explicit Layer(const Shape& weight, const Shape& bias = {}) {
    register_parameter("weight", zeros(weight));
    if (!bias.empty()) register_parameter("bias", zeros(bias));
  }
};

class TinyNet : public Module {
 public:
  TinyNet() {
    register_module("conv", std::make_shared<Layer>(Shape{4, 1, 3, 3}, Shape{4}));
    register_module("bn", std::make_shared<Layer>(Shape{4}, Shape{4}));
    register_module("fc", std::make_shared<Layer>(Shape{2, 4}));
  }
};
}  // namespace

TEST_CASE("weight_decay_groups leaves biases and norm parameters undecayed", "[optim]") {
  TinyNet net;
  const std::vector<ParamGroup> groups = weight_decay_groups(net, 5e-4);
  REQUIRE(groups.size() == 2);
  const NamedTensors named = net.named_parameters();
  REQUIRE(groups[0].params.size() == 2);
  CHECK(groups[0].params[0].same(named[0].second));
  CHECK(groups[0].params[1].same(named[4].second));
  CHECK(groups[0].options.at("weight_decay") == 5e-4);
  REQUIRE(groups[1].params.size() == 3);
  CHECK(groups[1].options.at("weight_decay") == 0.0);
  SGD sgd(groups, SgdOptions{.lr = 0.1, .momentum = 0.9});
  CHECK(sgd.option(0, "weight_decay") == 5e-4);
  CHECK(sgd.option(1, "weight_decay") == 0.0);
}

// Fused optimizer updates (every configuration of tests/cases/optim_cases.h) and gradient
// clipping on CUDA against the CPU reference: f32, and f16 / bf16 parameters stepping through
// fp32 masters (the CPU runs f32 on the same rounded values); lists of many tensors of odd
// sizes (several launches, tensors across chunks); the scaler's hook (inv_scale, found_inf on
// the device); a resume on the device.
#include <catch2/catch.hpp>

#include <cmath>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/optim/adamw.h"
#include "engine/optim/clip_grad.h"
#include "engine/optim/sgd.h"
#include "tests/cases/optim_cases.h"
#include "tests/cuda/parity_util.h"

using namespace sonata;
using namespace sonata::testing;

namespace {

// Around a chunk (65536), tiny, and more tensors (80) than one launch holds (74 for SGD, 55
// for Adam).
std::vector<int64_t> odd_sizes() {
  std::vector<int64_t> sizes = {1, 3, 65535, 65536, 65537, 140001, 17, 255, 1000, 4097};
  for (int64_t k = 0; sizes.size() < 80; ++k) sizes.push_back(1 + (k * 37) % 301);
  return sizes;
}

using MakeOptimizer = std::function<std::unique_ptr<Optimizer>(std::vector<Tensor>)>;

std::vector<Tensor> leaves(const std::vector<Tensor>& values, DType dtype, Device device) {
  std::vector<Tensor> out;
  for (const Tensor& v : values)
    out.push_back(v.to(dtype).to(device).detach().set_requires_grad(true));
  return out;
}

const Tensor& named(const OptimizerState& state, const std::string& name) {
  for (const auto& [key, tensor] : state.tensors)
    if (key == name) return tensor;
  FAIL("no state tensor " << name);
  static const Tensor none;
  return none;
}

void require_match(const Tensor& cuda, const Tensor& cpu, Tolerance tolerance,
                   const std::string& what) {
  const ParityResult result =
      compare_tensors(cuda.to(Device::cpu()).to(DType::f32), cpu.to(DType::f32), tolerance, what);
  INFO(result.report);
  REQUIRE(result.ok);
}

// `steps` steps on the CPU (f32) and on CUDA (`dtype`) from the same rounded values.
void check_parity(const MakeOptimizer& make, DType dtype, int steps, uint64_t seed) {
  INFO("dtype " << dtype_name(dtype));
  const std::vector<int64_t> sizes = odd_sizes();
  std::vector<Tensor> start;
  for (size_t i = 0; i < sizes.size(); ++i)
    start.push_back(parity_input({sizes[i]}, seed + i, -1, 1, false).to(dtype).to(DType::f32));
  const std::vector<Tensor> cpu = leaves(start, DType::f32, Device::cpu());
  const std::vector<Tensor> cuda = leaves(start, dtype, Device::cuda());
  auto cpu_optimizer = make(cpu);
  auto cuda_optimizer = make(cuda);
  for (int s = 0; s < steps; ++s) {
    for (size_t i = 0; i < sizes.size(); ++i) {
      const Tensor g = parity_input({sizes[i]}, seed + 1000 * (s + 1) + i, -1, 1, false).to(dtype);
      Tensor(cpu[i]).set_grad(g.to(DType::f32));
      Tensor(cuda[i]).set_grad(g.to(Device::cuda()));
    }
    cpu_optimizer->step();
    cuda_optimizer->step();
  }
  const OptimizerState cuda_state = cuda_optimizer->state_dict();
  for (size_t i = 0; i < sizes.size(); ++i) {
    INFO("tensor " << i << " of " << sizes[i] << " elements");
    require_match(cuda[i], cpu[i], parity_tolerance(dtype), "parameter");
    if (dtype != DType::f32)
      require_match(named(cuda_state, "state." + std::to_string(i) + ".master"), cpu[i],
                    parity_tolerance(DType::f32), "fp32 master");
  }
}

// Every CUDA dtype for one configuration of the table.
void check_parity(const OptimizerCase& c) {
  INFO(c.name);
  const MakeOptimizer make = [&c](std::vector<Tensor> params) { return c.make(std::move(params)); };
  for (DType dtype : kParityDTypes) check_parity(make, dtype, c.steps, c.seed);
}

}  // namespace

TEST_CASE("cuda SGD matches the CPU over many tensors", "[cuda][optim]") {
  for (const OptimizerCase& c : optimizer_cases())
    if (c.kind == OptimizerCase::Kind::sgd) check_parity(c);
}

TEST_CASE("cuda Adam and AdamW match the CPU over many tensors", "[cuda][optim]") {
  for (const OptimizerCase& c : optimizer_cases())
    if (c.kind != OptimizerCase::Kind::sgd) check_parity(c);
}

TEST_CASE("cuda steps unscale with inv_scale and skip on found_inf", "[cuda][optim]") {
  for (DType dtype : kParityDTypes) {
    for (const char* name : {"nesterov SGD", "AdamW"}) {
      const OptimizerCase& c = optimizer_case(name);
      INFO("dtype " << dtype_name(dtype) << " " << c.name);
      const Tensor start = parity_input({70001}, 7, -1, 1, false);
      const Tensor grad = parity_input({70001}, 8, -1, 1, false).to(dtype).to(Device::cuda());
      auto run = [&](double grad_factor, const StepScaling& scaling) {
        const std::vector<Tensor> p = leaves({start}, dtype, Device::cuda());
        auto optimizer = c.make(p);
        for (int s = 0; s < 3; ++s) {
          Tensor(p[0]).set_grad(mul(grad, grad_factor).to(dtype));
          optimizer->step(scaling);
        }
        return p[0].to(Device::cpu()).to_vector<float>();
      };
      const auto on_cuda = [](const Tensor& t) { return t.to(Device::cuda()); };
      const std::vector<float> plain = run(1, {});
      // Powers of two: the scaled gradients and their unscaling are exact.
      CHECK(run(4, {on_cuda(full({1}, 0.25)), Tensor()}) == plain);
      CHECK(run(4, {on_cuda(full({1}, 0.25)), on_cuda(zeros({1}))}) == plain);
      CHECK(run(1, {Tensor(), on_cuda(ones({1}))}) ==
            start.to(dtype).to(DType::f32).to_vector<float>());
    }
  }
}

TEST_CASE("cuda optimizers resume bitwise from their state dict", "[cuda][optim]") {
  for (DType dtype : kParityDTypes) {
    INFO("dtype " << dtype_name(dtype));
    const std::vector<int64_t> sizes = {3, 65537, 1000};
    std::vector<Tensor> start, grads;
    for (size_t i = 0; i < sizes.size(); ++i) {
      start.push_back(parity_input({sizes[i]}, 50 + i, -1, 1, false));
      grads.push_back(parity_input({sizes[i]}, 60 + i, -1, 1, false).to(dtype).to(Device::cuda()));
    }
    const std::vector<Tensor> straight = leaves(start, dtype, Device::cuda());
    const OptimizerCase& amsgrad = optimizer_case("Adam amsgrad");
    auto a = amsgrad.make(straight);
    auto step = [&](Optimizer& optimizer, const std::vector<Tensor>& params, int s) {
      for (size_t i = 0; i < params.size(); ++i)
        Tensor(params[i]).set_grad(mul(grads[i], 1.0 + s).to(dtype));
      optimizer.step();
    };
    step(*a, straight, 0);
    step(*a, straight, 1);
    // Through host memory, as a checkpoint goes.
    OptimizerState checkpoint = a->state_dict();
    for (auto& [name, tensor] : checkpoint.tensors) tensor = tensor.to(Device::cpu());
    std::vector<Tensor> resumed;
    for (const Tensor& p : straight) resumed.push_back(p.detach().clone().set_requires_grad(true));
    auto b = amsgrad.make(resumed);
    b->load_state_dict(checkpoint);
    for (int s = 2; s < 4; ++s) {
      step(*a, straight, s);
      step(*b, resumed, s);
    }
    for (size_t i = 0; i < sizes.size(); ++i)
      CHECK(resumed[i].to(Device::cpu()).to(DType::f32).to_vector<float>() ==
            straight[i].to(Device::cpu()).to(DType::f32).to_vector<float>());
  }
}

TEST_CASE("cuda clip_grad_norm_ matches the CPU", "[cuda][optim]") {
  for (DType dtype : kParityDTypes) {
    INFO("dtype " << dtype_name(dtype));
    const std::vector<int64_t> sizes = odd_sizes();
    std::vector<Tensor> cpu, cuda;
    for (size_t i = 0; i < sizes.size(); ++i) {
      const Tensor g = parity_input({sizes[i]}, 900 + i, -2, 2, false).to(dtype);
      cpu.push_back(zeros({sizes[i]}, TensorOptions{}.grad()));
      cuda.push_back(zeros({sizes[i]}, TensorOptions{}.with(dtype).with(Device::cuda()).grad()));
      Tensor(cpu.back()).set_grad(g.to(DType::f32));
      Tensor(cuda.back()).set_grad(g.to(Device::cuda()));
    }
    const double cpu_norm = clip_grad_norm_(cpu, 5.0).item();
    const double cuda_norm = clip_grad_norm_(cuda, 5.0).item();
    CHECK(cuda_norm == Approx(cpu_norm).epsilon(1e-6));
    for (size_t i = 0; i < sizes.size(); ++i) {
      INFO("tensor " << i);
      require_match(cuda[i].grad(), cpu[i].grad(), parity_tolerance(dtype), "clipped gradient");
    }
    CHECK(grad_norm(cuda).item() == Approx(5.0).epsilon(1e-2));
  }
}

TEST_CASE("cuda grad_squared_norm and clip_grads_to_norm_ match the CPU", "[cuda][optim]") {
  for (DType dtype : kParityDTypes) {
    INFO("dtype " << dtype_name(dtype));
    const std::vector<int64_t> sizes = odd_sizes();
    std::vector<Tensor> cpu, cuda;
    for (size_t i = 0; i < sizes.size(); ++i) {
      const Tensor g = parity_input({sizes[i]}, 950 + i, -2, 2, false).to(dtype);
      cpu.push_back(zeros({sizes[i]}, TensorOptions{}.grad()));
      cuda.push_back(zeros({sizes[i]}, TensorOptions{}.with(dtype).with(Device::cuda()).grad()));
      Tensor(cpu.back()).set_grad(g.to(DType::f32));
      Tensor(cuda.back()).set_grad(g.to(Device::cuda()));
    }
    const double cpu_squares = grad_squared_norm(cpu).item();
    const double cuda_squares = grad_squared_norm(cuda).item();
    CHECK(cuda_squares == Approx(cpu_squares).epsilon(1e-6));
    // A total norm of twice this part's (as if another stage held as much again).
    const double total = 2 * std::sqrt(cpu_squares);
    clip_grads_to_norm_(cpu, total, 3.0);
    clip_grads_to_norm_(cuda, total, 3.0);
    for (size_t i = 0; i < sizes.size(); ++i) {
      INFO("tensor " << i);
      require_match(cuda[i].grad(), cpu[i].grad(), parity_tolerance(dtype), "clipped gradient");
    }
    CHECK(grad_norm(cuda).item() == Approx(1.5).epsilon(1e-2));
  }
}

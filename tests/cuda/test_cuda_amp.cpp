// The loss scaler on CUDA against the CPU reference, for f32, f16 and bf16 gradients: the
// fused unscale-and-check over lists of odd-sized tensors (across chunks and across
// launches) gives the same bits and the same flag, and the scale updates alike on the
// device. Both backends compute the same f32 product and round it once, so the comparison
// is exact.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "engine/amp/loss_scaler.h"
#include "engine/optim/sgd.h"
#include "tests/cuda/parity_util.h"

using namespace sonata;
using namespace sonata::testing;

namespace {

// One inf or NaN to plant: tensor, element, value.
struct Plant {
  size_t tensor;
  int64_t element;
  float value;
};

std::vector<Tensor> grads_with(const std::vector<int64_t>& sizes, DType dtype, uint64_t seed,
                               const std::vector<Plant>& plants) {
  std::vector<Tensor> grads;
  for (size_t i = 0; i < sizes.size(); ++i) {
    // Scaled gradients: large, as after backward of a scaled loss.
    std::vector<float> g = parity_input({sizes[i]}, seed + i, -3e3, 3e3, false).to_vector<float>();
    for (const Plant& plant : plants)
      if (plant.tensor == i) g[size_t(plant.element)] = plant.value;
    grads.push_back(from_vector(g, {sizes[i]}).to(dtype));
  }
  return grads;
}

std::vector<Tensor> params_for(const std::vector<Tensor>& grads, Device device) {
  std::vector<Tensor> params;
  for (const Tensor& g : grads) {
    Tensor p = zeros(g.shape(), TensorOptions{}.with(g.dtype()).with(device).grad());
    p.set_grad(g.to(device));
    params.push_back(p);
  }
  return params;
}

// Equal values, or both NaN (the backends may disagree on a NaN's payload).
void require_same(const Tensor& cuda, const Tensor& cpu, size_t index) {
  const std::vector<float> a = cuda.to(Device::cpu()).to(DType::f32).to_vector<float>();
  const std::vector<float> b = cpu.to(DType::f32).to_vector<float>();
  REQUIRE(a.size() == b.size());
  for (size_t k = 0; k < a.size(); ++k) {
    if (std::isnan(a[k]) && std::isnan(b[k])) continue;
    if (a[k] != b[k]) {
      INFO("tensor " << index << " element " << k << ": cuda " << a[k] << ", cpu " << b[k]);
      REQUIRE(a[k] == b[k]);
    }
  }
}

// Sizes around a chunk (65536) and tiny ones; many_launches adds enough tensors (more than
// the 148 one launch holds) that the list is cut.
std::vector<int64_t> amp_sizes(bool many_launches) {
  std::vector<int64_t> sizes = {1, 7, 4099, 70000, 65536, 131073};
  if (many_launches)
    for (int64_t k = 0; sizes.size() < 170; ++k) sizes.push_back(1 + (k * 53) % 211);
  return sizes;
}

void check_unscale_parity(DType dtype, bool explicit_unscale, bool many_launches,
                          const std::vector<Plant>& plants) {
  const std::vector<int64_t> sizes = amp_sizes(many_launches);
  const std::vector<Tensor> grads = grads_with(sizes, dtype, 40, plants);
  const std::vector<Tensor> cpu = params_for(grads, Device::cpu());
  const std::vector<Tensor> cuda = params_for(grads, Device::cuda());
  const LossScalerOptions options{.init_scale = 1024, .growth_interval = 1};
  LossScaler cpu_scaler(Device::cpu(), options), cuda_scaler(Device::cuda(), options);
  if (explicit_unscale) {
    cpu_scaler.unscale_(cpu);
    cuda_scaler.unscale_(cuda);
  }
  const StepScaling cpu_scaling = cpu_scaler.step_scaling(cpu);
  const StepScaling cuda_scaling = cuda_scaler.step_scaling(cuda);
  CHECK(cuda_scaling.inv_scale.defined() == !explicit_unscale);
  CHECK(cuda_scaler.found_inf_value() == !plants.empty());
  CHECK(cpu_scaler.found_inf_value() == !plants.empty());
  for (size_t i = 0; i < sizes.size(); ++i) {
    INFO("tensor " << i << " of " << sizes[i] << " elements");
    require_same(cuda[i].grad(), cpu[i].grad(), i);
    if (!explicit_unscale) require_same(cuda[i].grad(), grads[i], i);  // the check writes nothing
  }
  cpu_scaler.update();
  cuda_scaler.update();
  CHECK(cuda_scaler.scale_value() == cpu_scaler.scale_value());
  CHECK(cuda_scaler.scale_value() == (plants.empty() ? 2048 : 512));
  CHECK(cuda_scaler.growth_tracker_value() == 0);
  CHECK_FALSE(cuda_scaler.found_inf_value());
}

}  // namespace

TEST_CASE("cuda unscale_ matches the CPU for clean gradients", "[cuda][amp]") {
  for (DType dtype : kParityDTypes) {
    for (bool explicit_unscale : {true, false}) {
      INFO("dtype " << dtype_name(dtype) << (explicit_unscale ? " unscale_" : " check only"));
      check_unscale_parity(dtype, explicit_unscale, false, {});
      check_unscale_parity(dtype, explicit_unscale, true, {});
    }
  }
}

TEST_CASE("cuda unscale_ finds an inf or NaN wherever it is", "[cuda][amp]") {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<std::vector<Plant>> cases = {
      {{0, 0, inf}},      // the one-element tensor
      {{1, 6, -inf}},     // the last element of a tiny one
      {{3, 69999, nan}},  // the end of the second chunk of 70000
      {{5, 65536, inf}},  // the first element of a second chunk
      {{2, 2049, nan}, {4, 0, -inf}},
      {{169, 0, nan}},  // the last tensor, in the second launch
  };
  for (DType dtype : kParityDTypes) {
    for (size_t c = 0; c < cases.size(); ++c) {
      for (bool explicit_unscale : {true, false}) {
        INFO("dtype " << dtype_name(dtype) << " case " << c
                      << (explicit_unscale ? " unscale_" : " check only"));
        check_unscale_parity(dtype, explicit_unscale, true, cases[c]);
      }
    }
  }
}

TEST_CASE("cuda steps skip on an inf in the gradients and apply otherwise", "[cuda][amp]") {
  // One inf element skips the whole step on the device; the next clean step applies,
  // unscaled (gradient 2 once unscaled, through fp32 masters for half parameters).
  for (DType dtype : kParityDTypes) {
    INFO("dtype " << dtype_name(dtype));
    Tensor w = full({4097}, 0.5, TensorOptions{}.with(dtype).with(Device::cuda()).grad());
    SGD sgd({w}, SgdOptions{.lr = 0.5});
    LossScaler scaler(Device::cuda(), LossScalerOptions{.init_scale = 256});
    const std::vector<float> before = w.to(Device::cpu()).to(DType::f32).to_vector<float>();
    w.set_grad(full({4097}, 256.0 * 2, TensorOptions{}.with(dtype)).to(Device::cuda()));
    Tensor(w.grad()).slice(0, 4000, 4001).fill_(std::numeric_limits<double>::infinity());
    sgd.step(scaler.step_scaling({w}));
    CHECK(w.to(Device::cpu()).to(DType::f32).to_vector<float>() == before);
    scaler.update();
    CHECK(scaler.scale_value() == 128);

    w.set_grad(full({4097}, 128.0 * 2, TensorOptions{}.with(dtype)).to(Device::cuda()));
    scaler.unscale_({w});
    sgd.step(scaler.step_scaling({w}));
    scaler.update();
    const std::vector<float> after = w.to(Device::cpu()).to(DType::f32).to_vector<float>();
    CHECK(after[0] == -0.5f);  // 0.5 - 0.5 * 2
    CHECK(after[4096] == -0.5f);
  }
}

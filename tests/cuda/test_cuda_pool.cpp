// max_pool2d and adaptive_avg_pool2d on CUDA against the CPU reference in f32, f16 and bf16:
// values, indices and gradients, from NCHW and channels-last input.
#include <catch2/catch.hpp>

#include <array>
#include <limits>
#include <vector>

#include "engine/ops/memory_format.h"
#include "engine/ops/pool.h"
#include "tests/cases/pool_cases.h"
#include "tests/cuda/parity_util.h"

using namespace sonata;
using namespace sonata::testing;

namespace {

using Pair = std::array<int64_t, 2>;

}  // namespace

TEST_CASE("max_pool2d matches the CPU", "[cuda][pool]") {
  uint64_t seed = 1000;
  for (const MaxPoolCase& c : max_pool_cases()) {
    INFO(c.name);
    const Tensor x = parity_input(c.x, ++seed);
    require_parity(
        [&](const std::vector<Tensor>& in) {
          return max_pool2d(in[0], c.kernel, c.stride, c.padding, c.dilation, c.ceil_mode).first;
        },
        {x});
    // The indices must be identical: both sides see the same rounded values and keep the
    // first maximum.
    require_parity(
        [&](const std::vector<Tensor>& in) {
          return max_pool2d(in[0], c.kernel, c.stride, c.padding, c.dilation, c.ceil_mode).second;
        },
        {x}, false);
  }
}

TEST_CASE("max_pool2d on CUDA propagates NaN like the CPU", "[cuda][pool]") {
  std::vector<float> values(2 * 1 * 4 * 4);
  for (size_t i = 0; i < values.size(); ++i) values[i] = float(i % 5) * 0.25f;
  values[5] = std::numeric_limits<float>::quiet_NaN();
  values[21] = std::numeric_limits<float>::quiet_NaN();
  const Tensor x = from_vector(values, {2, 1, 4, 4});
  for (Pair kernel : {Pair{2, 2}, Pair{3, 3}}) {
    INFO("kernel " << kernel[0]);
    const Pair stride{2, 2}, padding = kernel[0] == 2 ? Pair{0, 0} : Pair{1, 1};
    require_parity(
        [&](const std::vector<Tensor>& in) {
          return max_pool2d(in[0], kernel, stride, padding).first;
        },
        {x}, false);
    require_parity(
        [&](const std::vector<Tensor>& in) {
          return max_pool2d(in[0], kernel, stride, padding).second;
        },
        {x}, false);
  }
}

TEST_CASE("adaptive_avg_pool2d matches the CPU", "[cuda][pool]") {
  uint64_t seed = 1100;
  for (const auto& [shape, out] : adaptive_avg_pool_cases()) {
    INFO(shape_str(shape) << " -> " << out[0] << "x" << out[1]);
    require_parity([&](const std::vector<Tensor>& in) { return adaptive_avg_pool2d(in[0], out); },
                   {parity_input(shape, ++seed)});
  }
}

TEST_CASE("max_pool2d on CUDA: a window wholly in the padding holds -inf and index -1",
          "[cuda][pool]") {
  // 1x1 inputs, kernel 2, padding 1, dilation 2: the one window reads rows and columns -1
  // and 1, both outside. Negative inputs, so a window that wrongly starts at 0 shows.
  const Tensor x = from_vector(std::vector<float>{-3.5f, -0.25f, -7.0f}, {1, 3, 1, 1});
  const auto [cpu_y, cpu_index] = max_pool2d(x, {2, 2}, {2, 2}, {1, 1}, {2, 2});
  const float inf = std::numeric_limits<float>::infinity();
  REQUIRE(cpu_y.to_vector<float>() == std::vector<float>(3, -inf));
  REQUIRE(cpu_index.to_vector<int64_t>() == std::vector<int64_t>(3, -1));
  for (DType dtype : kParityDTypes) {
    INFO("dtype " << dtype_name(dtype));
    Tensor xc = x.to(dtype).to(Device::cuda()).detach();
    xc.set_requires_grad(true);
    const auto [y, index] = max_pool2d(xc, {2, 2}, {2, 2}, {1, 1}, {2, 2});
    CHECK(y.to(Device::cpu()).to(DType::f32).to_vector<float>() == cpu_y.to_vector<float>());
    CHECK(index.to(Device::cpu()).to_vector<int64_t>() == cpu_index.to_vector<int64_t>());
    // Such a window routes no gradient.
    sum(y).backward();
    CHECK(xc.grad().to(Device::cpu()).to(DType::f32).to_vector<float>() ==
          std::vector<float>(3, 0.0f));
  }
}

TEST_CASE("max_pool2d on channels-last input matches the CPU", "[cuda][pool][layout]") {
  // The CUDA kernels read channels-last directly (channel vectors of 16 or 8 bytes or single
  // elements by C); the CPU pools through NCHW copies. Output and indices stay channels-last.
  uint64_t seed = 1200;
  for (const MaxPoolCase& c : max_pool_cases()) {
    if (c.x.size() != 4) continue;
    INFO(c.name);
    const Tensor x = parity_input(c.x, ++seed);
    for (bool values : {true, false})
      require_parity(
          [&](const std::vector<Tensor>& in) {
            const auto [y, where] = max_pool2d(to_channels_last(in[0]), c.kernel, c.stride,
                                               c.padding, c.dilation, c.ceil_mode);
            REQUIRE(is_channels_last(y));
            REQUIRE(is_channels_last(where));
            return values ? y : where;
          },
          {x}, values);
  }
}

TEST_CASE("adaptive_avg_pool2d on channels-last input matches the CPU", "[cuda][pool][layout]") {
  uint64_t seed = 1300;
  for (const auto& [shape, out] : adaptive_avg_pool_cases()) {
    if (shape.size() != 4) continue;
    INFO(shape_str(shape) << " -> " << out[0] << "x" << out[1]);
    require_parity(
        [&](const std::vector<Tensor>& in) {
          const Tensor y = adaptive_avg_pool2d(to_channels_last(in[0]), out);
          REQUIRE(is_channels_last(y));
          return y;
        },
        {parity_input(shape, ++seed)});
  }
}

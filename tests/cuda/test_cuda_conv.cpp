// conv2d on CUDA (cuDNN) against the CPU reference (im2col + OpenBLAS) in f32, f16 and bf16,
// forward and backward, over the shapes VGG19_BN and DeepSpeech2 use.
#include <catch2/catch.hpp>

#include <vector>

#include "engine/ops/conv.h"
#include "engine/ops/memory_format.h"
#include "tests/cases/conv_cases.h"
#include "tests/cuda/parity_util.h"

using namespace sonata;
using namespace sonata::testing;

namespace {

ParityFunction conv_of(const Conv2dParams& params) {
  return [params](const std::vector<Tensor>& in) {
    return conv2d(in[0], in[1], in.size() > 2 ? in[2] : Tensor(), params);
  };
}

}  // namespace

// Weights stay small (|w| <= 0.25) so that sums of hundreds of products keep fp32's rounding
// well inside the f32 tolerance even where the output is near zero.
TEST_CASE("conv2d matches the CPU", "[cuda][conv]") {
  uint64_t seed = 900;
  for (const ConvCase& c : conv_cases()) {
    INFO(c.name);
    std::vector<Tensor> inputs{parity_input(c.x, ++seed),
                               parity_input(c.weight, ++seed, -0.25, 0.25)};
    if (c.bias) inputs.push_back(parity_input({c.weight[0]}, ++seed));
    require_parity(conv_of(c.params), inputs);
    // Twice: the second call runs on the cached algorithms.
    require_parity(conv_of(c.params), inputs);
  }
}

TEST_CASE("conv2d on CUDA when only some inputs require gradients", "[cuda][conv]") {
  const Conv2dParams params{{1, 1}, {1, 1}, {1, 1}};
  const Tensor x = parity_input({2, 4, 8, 8}, 950, -1, 1, false);
  const Tensor frozen_w = parity_input({8, 4, 3, 3}, 951, -0.25, 0.25, false);
  // The weight (and bias) alone, as for VGG's first layer.
  require_parity(conv_of(params),
                 {x, parity_input({8, 4, 3, 3}, 952, -0.25, 0.25), parity_input({8}, 953)});
  // The bias alone: its gradient is then a plain sum over grad_y.
  require_parity(conv_of(params), {x, frozen_w, parity_input({8}, 954)});
  // The input alone.
  require_parity(conv_of(params), {parity_input({2, 4, 8, 8}, 955), frozen_w});
}

TEST_CASE("conv2d on channels-last input matches the CPU", "[cuda][conv][layout]") {
  uint64_t seed = 1900;
  for (const ConvCase& c : conv_cases()) {
    INFO(c.name);
    std::vector<Tensor> inputs{parity_input(c.x, ++seed),
                               parity_input(c.weight, ++seed, -0.25, 0.25)};
    if (c.bias) inputs.push_back(parity_input({c.weight[0]}, ++seed));
    const Conv2dParams params = c.params;
    require_parity(
        [&](const std::vector<Tensor>& in) {
          const Tensor y =
              conv2d(to_channels_last(in[0]), in[1], in.size() > 2 ? in[2] : Tensor(), params);
          REQUIRE(is_channels_last(y));  // on both devices: the layout flows on
          return y;
        },
        inputs);
  }
}

TEST_CASE("a conv layer past its cudnnFind budget still matches the CPU", "[cuda][conv]") {
  // DS2's second convolution shape (11x21, stride 2 in time) over more time lengths than
  // kConvFindsPerLayer: the first ones are measured, the rest take cuDNN's heuristics, and
  // every one must be right.
  Conv2dParams params;
  params.stride = {2, 1};
  params.padding = {5, 10};
  uint64_t seed = 1900;
  const Tensor weight = parity_input({4, 3, 11, 21}, ++seed, -0.25, 0.25);
  for (int64_t t = 16; t <= 16 * 12; t += 16) {
    INFO("time length " << t);
    require_parity(conv_of(params), {parity_input({2, 3, t, 24}, ++seed), weight});
  }
}

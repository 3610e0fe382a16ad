// conv2d's bias on CUDA (kernels/cuda/conv_bias.cu) against the CPU, in the shapes that take
// each path of the gradient's line reductions (channels-last column sums split along the rows,
// NCHW planes split (few long planes), many small planes, a tall [n, channels] second pass) and
// of the bias add (channel vectors or planes in packs, or single elements).
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "engine/ops/conv.h"
#include "engine/ops/memory_format.h"
#include "tests/cuda/parity_util.h"

using namespace sonata;
using namespace sonata::testing;

TEST_CASE("conv2d bias gradient matches the CPU on every reduction path", "[cuda][conv]") {
  struct Case {
    std::string name;
    Shape x;
    int64_t out_channels;
    bool channels_last;
  };
  const std::vector<Case> cases = {
      {"channels-last, 16384 rows of 3 channels (split columns)", {4, 2, 64, 64}, 3, true},
      {"channels-last, 5 channels, odd rows", {3, 1, 37, 41}, 5, true},
      {"NCHW, two 250 x 250 planes (split rows)", {1, 1, 250, 250}, 2, false},
      {"NCHW, 64 x 4 planes of 25 (warp rows)", {64, 2, 5, 5}, 4, false},
      {"NCHW, 2000 samples of 3 channels (split columns)", {2000, 1, 2, 2}, 3, false},
      {"channels-last, 16 channels: bias added in 16-byte packs", {2, 3, 9, 7}, 16, true},
      {"NCHW, planes of 64: bias added in 16-byte packs", {3, 2, 8, 8}, 8, false},
  };
  uint64_t seed = 2900;
  for (const Case& c : cases) {
    INFO(c.name);
    const Tensor x = parity_input(c.x, ++seed, -1, 1, false);
    const Tensor weight = parity_input({c.out_channels, c.x[1], 1, 1}, ++seed, -0.25, 0.25, false);
    const Tensor bias = parity_input({c.out_channels}, ++seed);
    const bool channels_last = c.channels_last;
    require_parity(
        [&](const std::vector<Tensor>& in) {
          return conv2d(channels_last ? to_channels_last(in[0]) : in[0], in[1], in[2], {});
        },
        {x, weight, bias});
  }
}

// The cudnnFind budget (kernels/common/conv_find_budget.h): a layer measures at most
// kConvFindsPerLayer shapes per pass, whatever its batch and spatial sizes; other layers,
// passes and math modes have budgets of their own.
#include <catch2/catch.hpp>

#include "kernels/common/conv_find_budget.h"

using namespace sonata::kernels;

namespace {

// DS2's first convolution, 11x41, stride 2, over [n, 1, t, 161].
Conv2dShape ds2_conv(int64_t n, int64_t t) {
  Conv2dShape s;
  s.n = n, s.c_in = 1, s.h = t, s.w = 161, s.c_out = 32, s.kh = 11, s.kw = 41;
  s.stride_h = 2, s.stride_w = 2, s.pad_h = 5, s.pad_w = 20;
  s.h_out = (t + 2 * 5 - 11) / 2 + 1, s.w_out = (161 + 40 - 41) / 2 + 1;
  return s;
}

}  // namespace

TEST_CASE("a conv layer measures a bounded number of shapes, then takes the heuristics",
          "[core][conv]") {
  ConvFindBudget budget;
  int measured = 0;
  for (int64_t t = 100; t < 1700; t += 16)  // a LibriSpeech epoch's time lengths
    measured += budget.take(conv_layer_key(0, 1, 0, true, false, ds2_conv(32, t)));
  CHECK(measured == kConvFindsPerLayer);
  // The batch size is not part of the layer either.
  CHECK_FALSE(budget.take(conv_layer_key(0, 1, 0, true, false, ds2_conv(7, 300))));
  // Another pass, math mode, determinism, dtype, device or layer has its own budget.
  CHECK(budget.take(conv_layer_key(0, 1, 1, true, false, ds2_conv(32, 300))));
  CHECK(budget.take(conv_layer_key(0, 1, 0, false, false, ds2_conv(32, 300))));
  CHECK(budget.take(conv_layer_key(0, 1, 0, true, true, ds2_conv(32, 300))));
  CHECK(budget.take(conv_layer_key(0, 2, 0, true, false, ds2_conv(32, 300))));
  CHECK(budget.take(conv_layer_key(1, 1, 0, true, false, ds2_conv(32, 300))));
  Conv2dShape second = ds2_conv(32, 300);
  second.c_in = 32, second.kw = 21;
  CHECK(budget.take(conv_layer_key(0, 1, 0, true, false, second)));
  CHECK(budget.spent(conv_layer_key(0, 1, 0, true, false, ds2_conv(1, 1))) == kConvFindsPerLayer);
}

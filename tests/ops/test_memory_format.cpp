// Channels-last (NHWC) tensors: the layout helpers, and conv2d, batch_norm and the pools
// taking channels-last input on the CPU: the output keeps the layout, the values equal the
// NCHW path's, and float64 gradient checks hold through the layout change.
#include <catch2/catch.hpp>

#include "engine/ops/batch_norm.h"
#include "engine/ops/conv.h"
#include "engine/ops/memory_format.h"
#include "engine/ops/pool.h"
#include "engine/random.h"
#include "models/registry.h"
#include "tests/ops/op_test_util.h"
#include "tests/support/tensor_compare.h"

using namespace sonata;
using namespace sonata::testing;

TEST_CASE("to_channels_last keeps the values and stores channels innermost", "[ops][layout]") {
  const Tensor x = grad_input({2, 3, 4, 5}, 1);
  REQUIRE_FALSE(is_channels_last(x));
  const Tensor y = to_channels_last(x);
  REQUIRE(y.shape() == x.shape());
  REQUIRE(y.strides() == Shape{60, 1, 15, 3});
  REQUIRE(is_channels_last(y));
  REQUIRE(prefers_channels_last(y));
  REQUIRE(relative_error(y, x) == 0.0);
  REQUIRE(to_channels_last(y).same(y));  // already channels-last: no copy
  // One channel (or one pixel) is both layouts at once: a plain tensor takes the NCHW path,
  // and to_channels_last marks it by its channel stride (a view, no copy), so that the
  // layout flows on.
  const Tensor single = grad_input({2, 1, 4, 5}, 2);
  REQUIRE(is_channels_last(single));
  REQUIRE_FALSE(prefers_channels_last(single));
  const Tensor marked = to_channels_last(single);
  REQUIRE(marked.strides() == Shape{20, 1, 5, 1});
  REQUIRE(marked.data_ptr() == single.data_ptr());
  REQUIRE(prefers_channels_last(marked));
  REQUIRE(to_channels_last(marked).same(marked));
  const Tensor plain = to_contiguous_nchw(marked);
  REQUIRE(plain.strides() == Shape{20, 20, 5, 1});
  REQUIRE_FALSE(prefers_channels_last(plain));
  REQUIRE_FALSE(prefers_channels_last(to_channels_last(grad_input({2, 3, 1, 1}, 5))));
  REQUIRE_THROWS_WITH(to_channels_last(grad_input({2, 3}, 3)),
                      Catch::Contains("expected a 4-D [N, C, H, W] tensor, got [2, 3]"));
  // Differentiable: the gradient arrives in the input's own layout.
  Tensor leaf = grad_input({1, 2, 3, 3}, 4);
  sum(mul(to_channels_last(leaf), 2.0)).backward();
  REQUIRE(max_abs(sub(leaf.grad(), full(leaf.shape(), 2.0, f64_options()))) == 0.0);
}

TEST_CASE("conv2d on channels-last input keeps the layout and the NCHW values", "[ops][layout]") {
  const Conv2dParams params{{2, 1}, {1, 1}, {1, 1}};
  for (const int64_t c_in : {3, 1}) {  // one channel: a spectrogram into VGG's first layer
    INFO("input channels " << c_in);
    const Tensor x = grad_input({2, c_in, 7, 6}, 10), w = grad_input({4, c_in, 3, 3}, 11),
                 b = grad_input({4}, 12);
    const Tensor nchw = conv2d(x, w, b, params);
    const Tensor nhwc = conv2d(to_channels_last(x), w, b, params);
    REQUIRE(prefers_channels_last(nhwc));
    REQUIRE(relative_error(nhwc, nchw) == 0.0);
    require_gradients(
        [&](const std::vector<Tensor>& in) {
          return conv2d(to_channels_last(in[0]), in[1], in[2], params);
        },
        {x, w, b});
  }
}

TEST_CASE("batch_norm on channels-last input matches NCHW, with gradients", "[ops][layout]") {
  const Tensor x = grad_input({3, 4, 5, 3}, 20, -2, 3), w = grad_input({4}, 21, 0.5, 1.5),
               b = grad_input({4}, 22);
  for (const bool training : {true, false}) {
    INFO("training " << training);
    const BatchNormOptions options{.training = training};
    Tensor mean_nchw = grad_input({4}, 23).detach(),
           var_nchw = grad_input({4}, 24, 0.5, 2).detach();
    Tensor mean_nhwc = mean_nchw.clone(), var_nhwc = var_nchw.clone();
    const Tensor nchw = batch_norm_relu(x, w, b, mean_nchw, var_nchw, options);
    const Tensor nhwc = batch_norm_relu(to_channels_last(x), w, b, mean_nhwc, var_nhwc, options);
    REQUIRE(prefers_channels_last(nhwc));
    CHECK(relative_error(nhwc, nchw) < 1e-14);
    CHECK(relative_error(mean_nhwc, mean_nchw) < 1e-14);
    CHECK(relative_error(var_nhwc, var_nchw) < 1e-14);
    require_gradients(
        [&](const std::vector<Tensor>& in) {
          Tensor mean = zeros({4}, f64_options()), var = ones({4}, f64_options());
          return batch_norm(to_channels_last(in[0]), in[1], in[2], mean, var, options);
        },
        {x, w, b});
  }
}

TEST_CASE("max_pool2d and adaptive_avg_pool2d keep channels-last", "[ops][layout]") {
  const Tensor x = grad_input({2, 3, 6, 6}, 30);
  const auto [pooled, indices] = max_pool2d(to_channels_last(x), {2, 2}, {2, 2});
  REQUIRE(prefers_channels_last(pooled));
  const auto [pooled_nchw, indices_nchw] = max_pool2d(x, {2, 2}, {2, 2});
  REQUIRE(relative_error(pooled, pooled_nchw) == 0.0);
  REQUIRE(indices.to_vector<int64_t>() == indices_nchw.to_vector<int64_t>());
  const Tensor averaged = adaptive_avg_pool2d(to_channels_last(x), {4, 4});
  REQUIRE(prefers_channels_last(averaged));
  REQUIRE(relative_error(averaged, adaptive_avg_pool2d(x, {4, 4})) == 0.0);
  require_gradients(
      [](const std::vector<Tensor>& in) {
        const Tensor y = max_pool2d(to_channels_last(in[0]), {2, 2}, {2, 2}).first;
        return adaptive_avg_pool2d(y, {2, 2});
      },
      {x});
}

TEST_CASE("a channels-last vgg19_bn computes what the NCHW one does", "[ops][layout][vgg]") {
  ModelConfig config(std::map<std::string, std::string>{
      {"num-classes", "5"}, {"width", "0.0625"}, {"dropout", "0"}});
  manual_seed(7);
  auto nchw = make_model("vgg19_bn", config);
  config.set("channels-last", "true");
  manual_seed(7);
  auto nhwc = make_model("vgg19_bn", config);
  // 64 x 64 leaves 2 x 2 pixels at the last BN: with one pixel and two images its
  // normalised output is +-1 whatever the input, and its gradients are rounding noise.
  const Tensor x = randn({2, 3, 64, 64}), projection = randn({2, 5});
  const Tensor y_nchw = nchw->forward(x), y_nhwc = nhwc->forward(x);
  CHECK(relative_error(y_nhwc, y_nchw) < 1e-5);
  sum(mul(y_nchw, projection)).backward();
  sum(mul(y_nhwc, projection)).backward();
  const auto grads_nchw = nchw->named_parameters(), grads_nhwc = nhwc->named_parameters();
  double worst = 0, worst_zero = 0;
  for (size_t i = 0; i < grads_nchw.size(); ++i) {
    const Tensor ours = grads_nhwc[i].second.grad(), theirs = grads_nchw[i].second.grad();
    // A conv bias before training-mode BN has gradient zero (BN removes any shift): both
    // sides are rounding noise of ~1e-8, so they are held to that instead.
    if (max_abs(theirs) < 1e-6) {
      worst_zero = std::max(worst_zero, max_abs(ours));
      continue;
    }
    worst = std::max(worst, relative_error(ours, theirs));
  }
  CHECK(worst_zero < 1e-6);
  CHECK(worst < 1e-4);
  REQUIRE_THROWS_WITH(
      make_model("vgg19_bn",
                 ModelConfig(std::map<std::string, std::string>{{"channels-last", "yes"}})),
      Catch::Contains("channels-last"));
}

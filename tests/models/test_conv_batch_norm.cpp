// conv_batch_norm_relu (models/layers/conv_batch_norm.h) against the plain composition,
// BatchNorm::forward_relu(Conv2d::forward(x)), with a bias far from zero: in training the
// output, every gradient and the running statistics match it, and the bias gradient is an exact
// zero; in eval mode (the bias added again) the outputs match.
#include <catch2/catch.hpp>

#include "engine/autograd/grad_mode.h"
#include "engine/ops.h"
#include "engine/ops/memory_format.h"
#include "engine/random.h"
#include "models/layers/conv_batch_norm.h"
#include "tests/support/tensor_compare.h"

using namespace sonata;
using namespace sonata::testing;

namespace {

Tensor uniform(const Shape& shape, double low, double high, uint64_t seed) {
  Generator generator(seed, 3);
  return add(mul(rand(shape, {}, &generator), high - low), low).detach();
}

}  // namespace

TEST_CASE("a conv's bias before training-mode BatchNorm is left out exactly",
          "[models][layers][batch_norm]") {
  for (bool channels_last : {false, true}) {
    INFO("channels-last " << channels_last);
    const Conv2dParams params{{1, 1}, {1, 1}, {1, 1}};
    Conv2d plain_conv(3, 4, {3, 3}, params), folded_conv(3, 4, {3, 3}, params);
    BatchNorm plain_bn(4), folded_bn(4);
    {
      NoGradGuard no_grad;
      const Tensor weight = uniform({4, 3, 3, 3}, -0.5, 0.5, 1);
      const Tensor bias = uniform({4}, -3, 3, 2);  // far from zero: the running mean shows it
      for (Conv2d* conv : {&plain_conv, &folded_conv}) {
        conv->weight().copy_(weight);
        conv->bias().copy_(bias);
      }
    }
    const Tensor weights = uniform({2, 4, 6, 5}, -1, 1, 3);  // the loss: sum(y * weights)
    for (int step = 0; step < 2; ++step) {
      INFO("step " << step);
      Tensor x = uniform({2, 3, 6, 5}, -1, 2, 10 + uint64_t(step));
      if (channels_last) x = to_channels_last(x);
      Tensor plain_x = x.clone().detach(), folded_x = x.clone().detach();
      plain_x.set_requires_grad(true);
      folded_x.set_requires_grad(true);
      const Tensor plain = plain_bn.forward_relu(plain_conv.forward(plain_x));
      const Tensor folded = conv_batch_norm_relu(folded_conv, folded_bn, folded_x);
      CHECK(relative_error(folded, plain) < 1e-5);
      CHECK(is_channels_last(folded) == is_channels_last(plain));
      sum(mul(plain, weights)).backward();
      sum(mul(folded, weights)).backward();
      CHECK(relative_error(folded_x.grad(), plain_x.grad()) < 1e-4);
      CHECK(relative_error(folded_conv.weight().grad(), plain_conv.weight().grad()) < 1e-4);
      const NamedTensors plain_bn_state = plain_bn.named_parameters(),
                         folded_bn_state = folded_bn.named_parameters();
      for (size_t i = 0; i < plain_bn_state.size(); ++i) {
        INFO(plain_bn_state[i].first);
        CHECK(relative_error(folded_bn_state[i].second.grad(), plain_bn_state[i].second.grad()) <
              1e-4);
      }
      const NamedTensors plain_buffers = plain_bn.named_buffers(),
                         folded_buffers = folded_bn.named_buffers();
      for (size_t i = 0; i < plain_buffers.size(); ++i) {
        INFO(plain_buffers[i].first);
        if (plain_buffers[i].second.dtype() == DType::i64)
          CHECK(folded_buffers[i].second.to_vector<int64_t>() ==
                plain_buffers[i].second.to_vector<int64_t>());
        else
          CHECK(relative_error(folded_buffers[i].second, plain_buffers[i].second) < 1e-6);
      }
      // Autograd's value in exact arithmetic, exactly; the plain path leaves rounding noise.
      const Tensor bias_grad = folded_conv.bias().grad();
      REQUIRE(bias_grad.defined());
      CHECK(bias_grad.shape() == Shape{4});
      CHECK(max_abs(bias_grad) == 0.0);
    }
    plain_bn.eval();
    folded_bn.eval();
    NoGradGuard no_grad;
    const Tensor x = uniform({2, 3, 6, 5}, -1, 2, 20);
    CHECK(relative_error(conv_batch_norm_relu(folded_conv, folded_bn, x),
                         plain_bn.forward_relu(plain_conv.forward(x))) < 1e-6);
  }
}

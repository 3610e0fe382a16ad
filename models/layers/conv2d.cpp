#include "models/layers/conv2d.h"

#include <cmath>

#include "engine/random.h"
#include "models/layers/init.h"

namespace sonata {

Conv2d::Conv2d(int64_t in_channels, int64_t out_channels, std::array<int64_t, 2> kernel_size,
               const Conv2dParams& params, bool bias)
    : params_(params) {
  const int64_t fan_in = in_channels * kernel_size[0] * kernel_size[1];
  weight_ = register_parameter(
      "weight",
      default_uniform_init({out_channels, in_channels, kernel_size[0], kernel_size[1]}, fan_in));
  if (bias) bias_ = register_parameter("bias", default_uniform_init({out_channels}, fan_in));
}

Tensor Conv2d::forward(const Tensor& x) {
  return conv2d(x, weight_, bias_, params_);
}

}  // namespace sonata

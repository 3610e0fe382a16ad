#include "models/layers/init.h"

#include <cmath>

#include "engine/autograd/grad_mode.h"
#include "engine/random.h"

namespace sonata {

Tensor default_uniform_init(const Shape& shape, int64_t fan_in) {
  const double bound = fan_in > 0 ? 1.0 / std::sqrt(double(fan_in)) : 0.0;
  Tensor t = empty(shape);
  uniform_(t, -bound, bound);
  return t;
}

void kaiming_normal_fan_out_(Tensor& weight) {
  NoGradGuard no_grad;
  int64_t receptive = 1;
  for (int64_t d = 2; d < weight.dim(); ++d) receptive *= weight.shape()[d];
  const double fan_out = double(weight.shape()[0] * receptive);
  normal_(weight, 0.0, std::sqrt(2.0 / fan_out));
}

void normal_init_(Tensor& t, double mean, double std) {
  NoGradGuard no_grad;
  normal_(t, mean, std);
}

void constant_init_(Tensor& t, double value) {
  NoGradGuard no_grad;
  t.fill_(value);
}

}  // namespace sonata

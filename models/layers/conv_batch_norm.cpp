#include "models/layers/conv_batch_norm.h"

namespace sonata {

Tensor conv_batch_norm_relu(Conv2d& conv, BatchNorm& batch_norm, const Tensor& x) {
  if (!conv.bias().defined() || !batch_norm.uses_batch_statistics())
    return batch_norm.forward_relu(conv.forward(x));
  return batch_norm.forward_relu_without_bias(conv2d(x, conv.weight(), Tensor(), conv.params()),
                                              conv.bias());
}

}  // namespace sonata

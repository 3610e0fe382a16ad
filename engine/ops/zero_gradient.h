#pragma once
#include "engine/tensor.h"

namespace sonata {

// y's values (a new handle on y's memory, any layout) with `cancelled` recorded as a second
// input: the backward passes y's gradient through and gives `cancelled` an exact zero. For a
// parameter the caller leaves out because the next op removes it exactly (a convolution's bias
// before training-mode batch norm): its gradient is still made, zero as autograd's is in exact
// arithmetic, and reaches its hooks (the DDP reducer) like any other.
Tensor pass_with_zero_gradient(const Tensor& y, const Tensor& cancelled);

}  // namespace sonata

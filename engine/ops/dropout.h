#pragma once
// Dropout (torch.nn.functional.dropout): in training each element is zeroed with
// probability p and the kept ones scaled by 1 / (1 - p); identity in evaluation or for
// p == 0, zeros (times x, so NaN stays NaN) for p == 1. The mask comes from the generator's
// Philox stream (the default generator when null) with the element mapping of engine/random.h,
// so CPU and CUDA drop the same elements for the same generator state; the call reserves
// ceil(numel / 4) blocks of it. The backward regenerates the mask from the saved offset.
#include "engine/tensor.h"

namespace sonata {

class Generator;

Tensor dropout(const Tensor& x, double p, bool training, Generator* generator = nullptr);

}  // namespace sonata

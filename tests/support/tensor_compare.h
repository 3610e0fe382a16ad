#pragma once
// How the PyTorch parity tests measure a difference.
#include "engine/tensor.h"

namespace sonata::testing {

// max |ours - theirs| / max |theirs| over the tensor: a relative error that single small
// elements do not inflate (the absolute difference when theirs is all zero).
double relative_error(const Tensor& ours, const Tensor& theirs);

// max |t|, in double.
double max_abs(const Tensor& t);

}  // namespace sonata::testing

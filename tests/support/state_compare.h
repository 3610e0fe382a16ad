#pragma once
// Comparing trained models and checkpoints: a parallel run against the one process it must
// equal, within rounding.
#include "engine/nn/module.h"

namespace sonata::testing {

// Every entry of `actual` (its state_dict with `with_buffers`, else its parameters) within
// rounding of `expected`'s, relative to the entry's size: Catch checks.
void check_close(Module& actual, Module& expected, bool with_buffers);

// Two checkpoints' tensors: the same names in the same order, dtypes and shapes, the values
// within rounding (relative to each tensor's size).
void check_same_state(const NamedTensors& actual, const NamedTensors& expected);

// Whether any parameter of `a` differs from `b`'s (so that equal weights say something).
bool differs(Module& a, Module& b);

}  // namespace sonata::testing

#pragma once
// --precision: the dtype convolutions, GEMMs and the LSTM compute in, and the model cast
// that goes with it. BatchNorm keeps f32 parameters and running statistics (its kernels
// take f16/bf16 activations with f32 statistics); the optimizer keeps f32 master weights of
// every half-precision parameter; CTC, softmax and the losses read half inputs and
// accumulate in f32.
#include <string>

#include "engine/nn/module.h"
#include "train/option_modes.h"

namespace sonata {

DType compute_dtype(Precision precision);
// Casts every parameter and floating buffer to `dtype`, except BatchNorm's.
void cast_for_precision(Module& model, DType dtype);

}  // namespace sonata

#pragma once
// A model's step broken into its products: each convolution's and linear layer's forward,
// input gradient and weight gradient timed alone on the CPU (the shapes the step runs, found
// by running the model's layers once), with its multiply-adds, GFMA/s and share of the
// cores' measured FMA peak (bench/fma_peak.h); and the step's multiply-adds, so that the
// step's own share of the peak can be read beside its time.
#include <cstdint>
#include <string>

#include "engine/nn/layer_sequence.h"

namespace sonata::bench {

struct LayerPassOptions {
  std::string work;          // the "work" of each JSON line ("vgg19_bn", "ds2")
  bool time_passes = false;  // time and print each pass; else only count the step
  bool quick = false;        // one timed call a pass (a smoke run, not a figure)
  double peak_gfma = 0;      // the peak at the active capability and team; 0: not measured
};

// Runs `layers` on `input` once without gradients to find the input shape of each Conv2d,
// Linear and RNN, and returns the multiply-adds of one training step's products: every
// forward and weight gradient, every input gradient but the first layer's (its input needs
// none), the RNNs' input and recurrent products included. With time_passes, each conv and
// linear pass is timed alone (the CPU conv kernels with the algorithm the step gets, the
// engine's matmul for Linear) and printed as one JSON line with a "layer" key.
double step_multiply_adds(const LayerSequence& layers, const LayerValue& input,
                          const LayerPassOptions& options);

}  // namespace sonata::bench

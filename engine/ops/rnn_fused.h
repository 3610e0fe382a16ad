#pragma once
// A whole multi-layer LSTM / GRU (both directions, every layer) as one autograd node on CUDA,
// through cuDNN's RNN API (kernels/cuda/rnn_cudnn.h): one library call forward and two
// backward, however long the sequence, where the per-step path (engine/ops/rnn_sequence.h)
// launches a GEMM and a cell per step and direction. The CPU keeps the per-step path.
//
// Semantics are the per-step layers' (models/layers/rnn.h): x [T, N, in]; `lengths` (N host
// values in [0, T], empty = all T) stop each sample at its own length, the reverse direction
// starting at its last valid frame; output [T, N, D*H] is 0 at padded frames; h_n / c_n
// [L*D, N, H] are each sample's states after its own last step (the initial ones for a
// sample of length 0). h0 / c0 [L*D, N, H] or undefined (zeros).
//
// params: torch's parameters in its order, per layer and direction (layer * D + d):
// weight_ih [G*H, in_l], weight_hh [G*H, H], then bias_ih, bias_hh [G*H] when `bias`. They
// are copied into cuDNN's weight space at each call (cuDNN decides the layout, asked through
// cudnnGetRNNWeightParams), and their gradients are views of the weight-gradient space
// wherever a parameter's gates sit contiguously in torch's order, copies elsewhere.
#include <cstdint>
#include <vector>

#include "engine/tensor.h"

namespace sonata {

struct FusedRnnOptions {
  bool lstm = true;  // else GRU
  int64_t hidden = 0, layers = 1;
  bool bidirectional = false;
  bool bias = true;
};

struct FusedRnnResult {
  Tensor output, h_n, c_n;  // c_n undefined for the GRU
};

// Whether fused_rnn runs for x: a CUDA tensor of a dtype the cuDNN path supports, in a build
// with cuDNN, and the path not switched off.
bool fused_rnn_available(const Tensor& x);
// On by default; tests switch it off to run the per-step CUDA path for comparison.
void set_fused_rnn_enabled(bool enabled);

FusedRnnResult fused_rnn(const FusedRnnOptions& options, const Tensor& x,
                         const std::vector<Tensor>& params, const std::vector<int64_t>& lengths,
                         const Tensor& h0 = {}, const Tensor& c0 = {});

}  // namespace sonata

#pragma once
// torch.nn.LSTM and torch.nn.GRU (batch_first = false, as DeepSpeech2 uses them), with
// torch's parameter names and shapes so that its weights load unchanged:
//   weight_ih_l{k}[G*H, in], weight_hh_l{k}[G*H, H], bias_ih_l{k}[G*H], bias_hh_l{k}[G*H]
// and the same with the suffix _reverse for the backward direction (G = 4 for the LSTM's
// i, f, g, o; 3 for the GRU's r, z, n), all initialised U(-1/sqrt(H), 1/sqrt(H)).
//
// Input [T, N, in]; output [T, N, D*H] with the directions concatenated. With lengths (i64
// CPU [N], each in [0, T]) the batch is ragged as in pack_padded_sequence: frames
// t >= lengths[n] neither update sample n's state nor receive gradient, their output is 0,
// the reverse direction starts at each sample's own last frame, and h_n / c_n are taken at
// each sample's own last valid step. Each layer and direction projects every time step's
// input in one GEMM, then runs one recurrent GEMM and one fused cell (engine/ops/rnn_cell.h)
// per step; backward through time is ordinary autograd over those ops. On CUDA (f16, f32,
// f64, with cuDNN) the whole stack is instead one cuDNN call forward and two backward
// (engine/ops/rnn_fused.h), with the same parameters and the same semantics.
#include <cstdint>

#include "engine/nn/module.h"

namespace sonata {

struct RnnOptions {
  int64_t input_size = 0;
  int64_t hidden_size = 0;
  int64_t num_layers = 1;
  bool bidirectional = false;
  bool bias = true;
};

// h_n and c_n are [num_layers * D, N, H], indexed layer * D + direction as in torch;
// c is undefined for the GRU.
struct RnnResult {
  Tensor output, h_n, c_n;
};

// What LSTM and GRU share: parameters, layer and direction loops, ragged masking.
class RecurrentBase : public Module {
 public:
  const RnnOptions& options() const { return options_; }
  int64_t directions() const { return options_.bidirectional ? 2 : 1; }

  // Output only, all sequences full length, zero initial state.
  Tensor forward(const Tensor& x) override;
  // lengths: i64 CPU [N] or undefined (all T). h0 / c0: [L*D, N, H] or undefined (zeros).
  RnnResult forward(const Tensor& x, const Tensor& lengths, const Tensor& h0 = {},
                    const Tensor& c0 = {});

 protected:
  RecurrentBase(const RnnOptions& options, int64_t gates, bool has_cell_state);

 private:
  struct DirectionWeights {
    Tensor weight_ih, weight_hh, bias_ih, bias_hh;
  };
  RnnOptions options_;
  bool has_cell_state_;
  std::vector<DirectionWeights> weights_;  // index layer * D + direction
};

// What forward computes, on explicit parameters in torch's order, per layer and direction
// (layer * D + d): weight_ih, weight_hh and, with bias, bias_ih, bias_hh. `lstm` false: GRU.
RnnResult recurrent_forward(const RnnOptions& options, bool lstm, const std::vector<Tensor>& params,
                            const Tensor& x, const Tensor& lengths, const Tensor& h0 = {},
                            const Tensor& c0 = {});

class LSTM : public RecurrentBase {
 public:
  explicit LSTM(const RnnOptions& options) : RecurrentBase(options, 4, true) {}
};

class GRU : public RecurrentBase {
 public:
  explicit GRU(const RnnOptions& options) : RecurrentBase(options, 3, false) {}
};

}  // namespace sonata

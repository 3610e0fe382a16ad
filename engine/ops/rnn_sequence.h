#pragma once
// One direction of an LSTM or GRU layer over a whole sequence as one autograd node (what
// cudnnRNNForward / torch's fused RNN do): per step gates_h = h_prev @ weight_hh^T (+ bias)
// and the fused cell (engine/ops/rnn_cell.h, so ragged `lengths` behave exactly as there),
// with `reverse` running t = T-1 .. 0. Composed of per-step ops the same layer recorded 2T
// nodes, and weight_hh's gradient was T skinny products accumulated one by one; here
// backward runs the cell rule and one [N, G*H] x [G*H, H] product per step, then
// weight_hh's gradient as one GEMM over every step, sum_t dgates_h_t^T h_prev_t (k = T * N).
//   LSTM: gates_x [T, N, 4H], the input projection with both biases folded in (the cell only
//   adds them); weight_hh [4H, H]; h0, c0 [N, H].
//   GRU: gates_x [T, N, 3H] with b_ih; weight_hh [3H, H]; bias_hh [3H] or undefined (it
//   sits inside r * (W_hn h + b_hn), so it stays in the step); h0 [N, H].
// output [T, N, H] holds each step's h.
#include "engine/tensor.h"

namespace sonata {

struct LstmSequence {
  Tensor output;  // [T, N, H]
  Tensor h, c;    // [N, H]: the states after the last step processed
};

LstmSequence lstm_sequence(const Tensor& gates_x, const Tensor& weight_hh, const Tensor& h0,
                           const Tensor& c0, const Tensor& lengths = {}, bool reverse = false);

struct GruSequence {
  Tensor output;  // [T, N, H]
  Tensor h;       // [N, H]: the state after the last step processed
};

GruSequence gru_sequence(const Tensor& gates_x, const Tensor& weight_hh, const Tensor& bias_hh,
                         const Tensor& h0, const Tensor& lengths = {}, bool reverse = false);

}  // namespace sonata

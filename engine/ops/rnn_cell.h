#pragma once
// Fused recurrent cells: the elementwise half of one LSTM / GRU step (the GEMMs stay
// separate ops, so a layer can project every time step's input at once). Gate
// pre-activations are [N, G*H] in torch's order -- LSTM i, f, g, o; GRU r, z, n -- with
// gates_x = x @ W_ih^T + b_ih and gates_h = h_prev @ W_hh^T + b_hh:
//   LSTM: c = f * c_prev + i * g, h = o * tanh(c)
//   GRU:  n = tanh(x_n + r * h_n), h = (1 - z) * n + z * h_prev
// Ragged batches: `lengths` (i64 [N] on the gates' device, undefined = every sample active)
// makes sample b active at `step` iff step < lengths[b]. Inactive samples keep their state
// (h = h_prev, c = c_prev), get no gradient for their gates, and pass their state gradient
// straight back; a layer over padded sequences thus stops each sample at its own length.
// Both backward rules are hand-written (kernels/cpu|cuda/rnn_cell.h).
#include <cstdint>

#include "engine/tensor.h"

namespace sonata {

struct LstmState {
  Tensor h, c;
};

LstmState lstm_cell(const Tensor& gates_x, const Tensor& gates_h, const Tensor& h_prev,
                    const Tensor& c_prev, const Tensor& lengths = {}, int64_t step = 0);

Tensor gru_cell(const Tensor& gates_x, const Tensor& gates_h, const Tensor& h_prev,
                const Tensor& lengths = {}, int64_t step = 0);

}  // namespace sonata

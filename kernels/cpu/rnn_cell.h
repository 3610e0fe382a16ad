#pragma once
// Fused LSTM and GRU cells: the elementwise half of one recurrent step, after the input and
// recurrent GEMMs. Gates are pre-activations in torch.nn.LSTM / torch.nn.GRU order,
// row-major [batch, G * hidden] (LSTM: i, f, g, o; GRU: r, z, n). gates_h already holds
// h_prev @ W_hh^T + b_hh, so the GRU's n = tanh(x_n + r * gates_h_n) keeps b_hn inside r.
//
// Ragged batches: with `lengths` (batch values; null = all active) sample b is active at
// `step` iff step < lengths[b]. An inactive sample copies its state through (h = h_prev,
// c = c_prev); in the backward its gate gradients are 0 and its state gradients pass
// straight to h_prev / c_prev. The CUDA twin is kernels/cuda/rnn_cell.h.
#include <cstdint>

#include "base/dtype.h"

namespace sonata::kernels::cpu {

// c = f * c_prev + i * g, h = o * tanh(c).
void lstm_cell_forward(DType dtype, int64_t batch, int64_t hidden, const void* gates_x,
                       const void* gates_h, const void* h_prev, const void* c_prev,
                       const int64_t* lengths, int64_t step, void* h, void* c);

// grad_h / grad_c may be null (no gradient reached that output). grad_gates [batch, 4H] is
// the gradient of both gates_x and gates_h. grad_h_prev (null allowed when lengths is null)
// receives only the pass-through of inactive samples (0 for active ones: their h_prev
// gradient flows through gates_h). grad_c_prev is f * dc for active samples.
void lstm_cell_backward(DType dtype, int64_t batch, int64_t hidden, const void* gates_x,
                        const void* gates_h, const void* c_prev, const int64_t* lengths,
                        int64_t step, const void* grad_h, const void* grad_c, void* grad_gates,
                        void* grad_h_prev, void* grad_c_prev);

// h = (1 - z) * n + z * h_prev.
void gru_cell_forward(DType dtype, int64_t batch, int64_t hidden, const void* gates_x,
                      const void* gates_h, const void* h_prev, const int64_t* lengths, int64_t step,
                      void* h);

// grad_gates_x and grad_gates_h [batch, 3H] differ in their n part (grad_gates_h's is
// scaled by r); grad_h_prev is the direct part z * dh (dh for inactive samples).
void gru_cell_backward(DType dtype, int64_t batch, int64_t hidden, const void* gates_x,
                       const void* gates_h, const void* h_prev, const int64_t* lengths,
                       int64_t step, const void* grad_h, void* grad_gates_x, void* grad_gates_h,
                       void* grad_h_prev);

}  // namespace sonata::kernels::cpu

#pragma once
// Fused LSTM and GRU cells on CUDA, f16 / bf16 / f32 / f64 (half types compute in float):
// the same arguments and semantics as kernels/cpu/rnn_cell.h plus a trailing stream.
// `lengths` is a device pointer (or null). One thread per (sample, hidden unit) computes
// all of that unit's gates.
#include <cstdint>

#include <cuda_runtime_api.h>

#include "base/dtype.h"

namespace sonata::kernels::cuda {

void lstm_cell_forward(DType dtype, int64_t batch, int64_t hidden, const void* gates_x,
                       const void* gates_h, const void* h_prev, const void* c_prev,
                       const int64_t* lengths, int64_t step, void* h, void* c, cudaStream_t stream);

void lstm_cell_backward(DType dtype, int64_t batch, int64_t hidden, const void* gates_x,
                        const void* gates_h, const void* c_prev, const int64_t* lengths,
                        int64_t step, const void* grad_h, const void* grad_c, void* grad_gates,
                        void* grad_h_prev, void* grad_c_prev, cudaStream_t stream);

void gru_cell_forward(DType dtype, int64_t batch, int64_t hidden, const void* gates_x,
                      const void* gates_h, const void* h_prev, const int64_t* lengths, int64_t step,
                      void* h, cudaStream_t stream);

void gru_cell_backward(DType dtype, int64_t batch, int64_t hidden, const void* gates_x,
                       const void* gates_h, const void* h_prev, const int64_t* lengths,
                       int64_t step, const void* grad_h, void* grad_gates_x, void* grad_gates_h,
                       void* grad_h_prev, cudaStream_t stream);

}  // namespace sonata::kernels::cuda

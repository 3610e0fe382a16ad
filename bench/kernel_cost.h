#pragma once
// What each benchmarked kernel must move and compute, and the floor that sets on its time.
//
// Bytes count the compulsory traffic only: every input read once and every output written
// once, in the tensors' element size; intermediates a fused kernel could keep on chip
// (LSTM gates, softmax probabilities, CTC's alpha/beta tables) are not counted. Flops count
// the arithmetic of the operation as written (2 per multiply-add, one per add, compare,
// exp or log), not what a particular implementation happens to do. Element-wise and CTC
// flops are nominal: their floor is set by the bytes, and their flops are compared with
// the GEMM rate only to show that.
//
// bench/peer_kernels.py restates these formulas for PyTorch's side; keep the two in step.
#include <cstdint>

namespace sonata::bench {

enum class Pass { forward, backward };

struct KernelCost {
  double bytes = 0;
  double flops = 0;
};

// What the device can do at best, measured on it just before the kernels.
struct Ceilings {
  double copy_gbps = 0;    // a large buffer copy: (read + written bytes) / s / 1e9
  double gemm_tflops = 0;  // a large GEMM in the benchmark's precision: 2 M N K / s / 1e12
};

// C[M, N] = A[M, K] B[K, N]; backward makes dA = dC B^T and dB = A^T dC.
KernelCost gemm_cost(int64_t m, int64_t n, int64_t k, int64_t element_bytes, Pass pass);

// x[N, C, H, W] (*) w[K, C, R, S] -> y[N, K, P, Q], no bias; backward makes dx and dw.
struct ConvShape {
  int64_t n, c, h, w, k, r, s, stride, padding;
  int64_t p() const;  // output height
  int64_t q() const;  // output width
};
KernelCost conv2d_cost(const ConvShape& shape, int64_t element_bytes, Pass pass);

// relu(batch_norm(x)) in training on `elements` values over `channels` channels, with f32
// weight, bias and running statistics; backward makes dx, dweight and dbias.
KernelCost batch_norm_relu_cost(int64_t elements, int64_t channels, int64_t element_bytes,
                                Pass pass);

// Mean cross-entropy of logits [rows, classes] against i64 class indices [rows]; backward
// makes dlogits.
KernelCost softmax_cross_entropy_cost(int64_t rows, int64_t classes, int64_t element_bytes,
                                      Pass pass);

// One LSTM time step: gates = x W_ih^T + b_ih + h W_hh^T + b_hh over x [N, I] and h, c [N, H],
// then the cell; backward makes dx, dh, dc, and the weight and bias gradients.
KernelCost lstm_step_cost(int64_t batch, int64_t input, int64_t hidden, int64_t element_bytes,
                          Pass pass);

// CTC loss on f32 log-probabilities [T, N, C] with N targets of L labels (2L + 1 states);
// backward makes dlog_probs.
KernelCost ctc_cost(int64_t frames, int64_t batch, int64_t classes, int64_t target_length,
                    Pass pass);

// One AdamW update of `elements` f32 parameters: reads p, g, m, v; writes p, m, v.
KernelCost adamw_cost(int64_t elements);

// max(bytes / bandwidth, flops / rate) in milliseconds.
double floor_ms(const KernelCost& cost, const Ceilings& ceilings);

// How many input sets a kernel rotates through so that together they exceed `rotate_bytes`
// (twice the last-level cache, say) and no timed call finds its inputs in the cache: at
// least `min_sets`, at most 64.
int rotation_sets(double set_bytes, double rotate_bytes, int min_sets);

}  // namespace sonata::bench

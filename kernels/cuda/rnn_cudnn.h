#pragma once
// A whole multi-layer LSTM or GRU (uni- or bidirectional, ragged batch) through cuDNN's v8 RNN
// API: one cudnnRNNForward, and one cudnnRNNBackwardData_v8 + cudnnRNNBackwardWeights_v8,
// whatever the number of time steps. Data is sequence-major [T, N, features], padded
// (CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_UNPACKED with CUDNN_RNN_PADDED_IO_ENABLED), each sample
// running its own lengths[b] <= T steps; padded output frames and input gradients are 0.
// States are [layers * D, N, H] (null: zeros in, not wanted out).
//
// Math as PyTorch's cuDNN RNN: f16 with fp32 math precision on tensor cores; f32 with TF32
// allowed (CUDNN_DEFAULT_MATH) where base/math_mode.h allows it in cuDNN, else
// CUDNN_FMA_MATH; f64 plain. bf16 is not offered (rnn_cudnn_supports says so).
//
// The weight space is cuDNN's, laid out as cuDNN chooses: rnn_weight_layout asks
// cudnnGetRNNWeightParams where each gate's matrix and bias vectors sit, so a caller copies
// torch-named parameters in and reads their gradients out. Without cuDNN at build time
// rnn_cudnn_supports is false and every other function throws.
#include <cstddef>
#include <cstdint>
#include <vector>

#include <cuda_runtime_api.h>

#include "base/dtype.h"

namespace sonata::kernels::cuda {

enum class RnnCell { lstm, gru };

struct RnnShape {
  RnnCell cell = RnnCell::lstm;
  int64_t input = 0, hidden = 0, layers = 1;
  bool bidirectional = false;
  bool bias = true;
  int64_t gates() const { return cell == RnnCell::lstm ? 4 : 3; }
  int64_t directions() const { return bidirectional ? 2 : 1; }
};

bool rnn_cudnn_supports(DType dtype);

// Where torch's parameters of one pseudo-layer (layer * D + direction) sit in the weight
// space, in elements: for weight_ih, weight_hh, bias_ih, bias_hh (in that order; the biases
// absent without bias) the offset of each gate's block (torch's gate order is cuDNN's
// linLayerID order: LSTM i, f, g, o; GRU r, z, n).
struct RnnWeightLayout {
  size_t bytes = 0;
  // [pseudo-layer][parameter][gate] -> element offset
  std::vector<std::vector<std::vector<int64_t>>> offsets;
};
// `weights` is the weight space itself (rnn_weight_space_bytes long): cuDNN gives pointers
// into it.
size_t rnn_weight_space_bytes(DType dtype, const RnnShape& shape, cudaStream_t stream);
RnnWeightLayout rnn_weight_layout(DType dtype, const RnnShape& shape, const void* weights,
                                  cudaStream_t stream);

// The reserve space a training forward needs (kept until backward).
size_t rnn_reserve_bytes(DType dtype, const RnnShape& shape, int64_t steps,
                         const std::vector<int32_t>& lengths, cudaStream_t stream);

// lengths: host copy, N values in [0, steps]; dev_lengths: the same on the device (cuDNN
// reads both). reserve null (0 bytes): inference.
void rnn_forward(DType dtype, const RnnShape& shape, int64_t steps,
                 const std::vector<int32_t>& lengths, const int32_t* dev_lengths, const void* x,
                 const void* hx, const void* cx, const void* weights, void* y, void* hy, void* cy,
                 void* reserve, size_t reserve_bytes, cudaStream_t stream);

// dx, and dhx / dcx where not null, from dy, dhy / dcy (null: zero); then dweights +=
// the weight gradient (cuDNN's CUDNN_WGRAD_MODE_ADD: the caller zeroes it).
void rnn_backward(DType dtype, const RnnShape& shape, int64_t steps,
                  const std::vector<int32_t>& lengths, const int32_t* dev_lengths, const void* x,
                  const void* hx, const void* cx, const void* weights, const void* y,
                  const void* dy, const void* dhy, const void* dcy, void* dx, void* dhx, void* dcx,
                  void* dweights, void* reserve, size_t reserve_bytes, cudaStream_t stream);

}  // namespace sonata::kernels::cuda

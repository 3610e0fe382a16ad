#pragma once
// The emulated cuDNN RNN API's descriptors, its weight-space and reserve-space layouts, and
// the naive loops behind cudnnRNNForward / BackwardData_v8 / BackwardWeights_v8
// (emu/libs/cudnn_rnn_*.cpp). LSTM and GRU cells, uni- or bidirectional, any number of
// layers, double or no bias; the equations are cuDNN's documented ones (cudnnRNNMode_t):
//   LSTM: i, f, o = sigmoid(W x + R h + b_W + b_R), c' = tanh(...), c = f c_prev + i c',
//         h = o tanh(c); linLayerID 0-3 input matrices i, f, c', o, 4-7 recurrent.
//   GRU:  r, u = sigmoid(W x + R h + b_W + b_R), h' = tanh(W_h x + r (R_h h + b_Rh) + b_Wh),
//         h = (1 - u) h' + u h_prev; linLayerID 0-2 input r, u, h', 3-5 recurrent.
#include <cstdint>
#include <vector>

#include "emu/libs/cudnn_internal.h"

struct cudnnRNNStruct {
  bool set = false;
  cudnnRNNMode_t mode = CUDNN_LSTM;
  cudnnRNNBiasMode_t bias = CUDNN_RNN_DOUBLE_BIAS;
  cudnnDirectionMode_t direction = CUDNN_UNIDIRECTIONAL;
  cudnnDataType_t data = CUDNN_DATA_FLOAT;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
  int input = 0, hidden = 0, layers = 0;
  uint32_t aux = 0;
};

struct cudnnRNNDataStruct {
  bool set = false;
  cudnnDataType_t type = CUDNN_DATA_FLOAT;
  cudnnRNNDataLayout_t layout = CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_UNPACKED;
  int max_seq = 0, batch = 0, vector = 0;
  std::vector<int> lengths;
  bool has_fill = false;
  double fill = 0;
};

namespace sonata::emu::dnn {

// The sizes of an RNN descriptor, and where its parameters sit in the weight space. The
// emulator's own layout: every pseudo-layer's matrices first, then every bias vector, so a
// caller that assumes PyTorch's flat order instead of asking cudnnGetRNNWeightParams reads
// the wrong values.
struct RnnGeometry {
  int gates = 4;       // G: 4 for the LSTM, 3 for the GRU
  int directions = 1;  // D
  int layers = 0, hidden = 0, input = 0;
  bool bias = true;
  Elem elem = Elem::f32;
  bool tf32 = false;  // fp32 products on tensor cores (DEFAULT or TENSOR_OP math)

  int pseudo_layers() const { return layers * directions; }
  int64_t layer_input(int pseudo_layer) const {
    return pseudo_layer < directions ? input : int64_t(hidden) * directions;
  }
  // Element offsets into the weight space; linLayerID < G: input matrix, else recurrent.
  int64_t matrix_offset(int pseudo_layer, int lin_layer) const;
  int64_t matrix_cols(int pseudo_layer, int lin_layer) const {
    return lin_layer < gates ? layer_input(pseudo_layer) : hidden;
  }
  int64_t bias_offset(int pseudo_layer, int lin_layer) const;
  int64_t weight_elements() const;
};

cudnnStatus_t rnn_geometry(const cudnnRNNStruct* rnn, const char* call, RnnGeometry* out);

// Checks that an RNN data descriptor fits the RNN (its type, batch, vector size) and returns
// the element offset of the vector of (t, b), or -1 where the layout holds none (packed).
int64_t rnn_data_offset(const cudnnRNNDataStruct& d, int t, int b);
int64_t rnn_data_elements(const cudnnRNNDataStruct& d);

// The reserve space: per pseudo-layer, time step and sample one record of doubles.
int64_t rnn_record_doubles(const RnnGeometry& g);
size_t rnn_reserve_bytes(const RnnGeometry& g, const cudnnRNNDataStruct& x);
size_t rnn_workspace_bytes(const RnnGeometry& g, const cudnnRNNDataStruct& x);

// One call's operands (device pointers; states may be null: zero / not wanted).
struct RnnOperands {
  RnnGeometry g;
  cudnnRNNDataStruct x, y;  // copies: the call's descriptors as they were when enqueued
  const void* x_data = nullptr;
  void* y_data = nullptr;  // y (forward), dy (backward data)
  void* dx = nullptr;
  const void *hx = nullptr, *cx = nullptr, *dhy = nullptr, *dcy = nullptr;
  void *hy = nullptr, *cy = nullptr, *dhx = nullptr, *dcx = nullptr;
  const void* weights = nullptr;
  void* dweights = nullptr;
  double* reserve = nullptr;
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
};

void rnn_forward(const RnnOperands& op);
void rnn_backward_data(const RnnOperands& op);
void rnn_backward_weights(const RnnOperands& op);

}  // namespace sonata::emu::dnn

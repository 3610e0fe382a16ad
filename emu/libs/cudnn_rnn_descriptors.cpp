// The emulated cuDNN RNN API's descriptors, weight space and temp space sizes.
#include <memory>
#include <string>

#include "emu/libs/cudnn_rnn_internal.h"

namespace sonata::emu::dnn {

int64_t RnnGeometry::matrix_offset(int pseudo_layer, int lin_layer) const {
  int64_t offset = 0;
  for (int p = 0; p < pseudo_layer; ++p)
    offset += int64_t(gates) * hidden * (layer_input(p) + hidden);
  if (lin_layer < gates) return offset + int64_t(lin_layer) * hidden * layer_input(pseudo_layer);
  return offset + int64_t(gates) * hidden * layer_input(pseudo_layer) +
         int64_t(lin_layer - gates) * hidden * hidden;
}

int64_t RnnGeometry::bias_offset(int pseudo_layer, int lin_layer) const {
  return matrix_offset(pseudo_layers(), 0) +
         (int64_t(pseudo_layer) * 2 * gates + lin_layer) * hidden;
}

int64_t RnnGeometry::weight_elements() const {
  return matrix_offset(pseudo_layers(), 0) +
         (bias ? int64_t(pseudo_layers()) * 2 * gates * hidden : 0);
}

cudnnStatus_t rnn_geometry(const cudnnRNNStruct* rnn, const char* call, RnnGeometry* out) {
  if (!rnn || !rnn->set)
    return fail(CUDNN_STATUS_BAD_PARAM,
                std::string(call) + ": the RNN descriptor is null or was never set");
  out->gates = rnn->mode == CUDNN_LSTM ? 4 : 3;
  out->directions = rnn->direction == CUDNN_BIDIRECTIONAL ? 2 : 1;
  out->layers = rnn->layers;
  out->hidden = rnn->hidden;
  out->input = rnn->input;
  out->bias = rnn->bias == CUDNN_RNN_DOUBLE_BIAS;
  elem_of(rnn->data, &out->elem);
  out->tf32 = rnn->data == CUDNN_DATA_FLOAT && rnn->math != CUDNN_FMA_MATH;
  return CUDNN_STATUS_SUCCESS;
}

int64_t rnn_data_offset(const cudnnRNNDataStruct& d, int t, int b) {
  switch (d.layout) {
    case CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_UNPACKED:
      return (int64_t(t) * d.batch + b) * d.vector;
    case CUDNN_RNN_DATA_LAYOUT_BATCH_MAJOR_UNPACKED:
      return (int64_t(b) * d.max_seq + t) * d.vector;
    case CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_PACKED: {
      // Time step by time step, the samples still running at t (lengths are non-increasing).
      if (t >= d.lengths[size_t(b)]) return -1;
      int64_t rows = 0;
      for (int s = 0; s < t; ++s)
        for (int n = 0; n < d.batch; ++n) rows += d.lengths[size_t(n)] > s ? 1 : 0;
      return (rows + b) * d.vector;
    }
  }
  return -1;
}

int64_t rnn_data_elements(const cudnnRNNDataStruct& d) {
  if (d.layout != CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_PACKED)
    return int64_t(d.max_seq) * d.batch * d.vector;
  int64_t rows = 0;
  for (int len : d.lengths) rows += len;
  return rows * d.vector;
}

// Per (pseudo-layer, step, sample): the activated gates, c, h, the GRU's R_h h_prev + b_Rh,
// and (written by backward data) the pre-activation gradients on the input side and on the
// recurrent side (they differ in the GRU's h' gate).
int64_t rnn_record_doubles(const RnnGeometry& g) {
  return 3 * int64_t(g.gates) * g.hidden + 3 * int64_t(g.hidden);
}

size_t rnn_reserve_bytes(const RnnGeometry& g, const cudnnRNNDataStruct& x) {
  return size_t(g.pseudo_layers()) * size_t(x.max_seq) * size_t(x.batch) *
         size_t(rnn_record_doubles(g)) * sizeof(double);
}

// Scratch the emulated kernels "use": one step's gates for the whole batch. Every call
// writes all of it, so a workspace shared with live data is caught.
size_t rnn_workspace_bytes(const RnnGeometry& g, const cudnnRNNDataStruct& x) {
  return size_t(x.batch) * size_t(g.gates) * size_t(g.hidden) * sizeof(double) + 256;
}

}  // namespace sonata::emu::dnn

using namespace sonata::emu::dnn;

cudnnStatus_t cudnnCreateRNNDescriptor(cudnnRNNDescriptor_t* desc) {
  if (!desc) return fail(CUDNN_STATUS_BAD_PARAM, "cudnnCreateRNNDescriptor: null pointer");
  *desc = new cudnnRNNStruct;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnDestroyRNNDescriptor(cudnnRNNDescriptor_t desc) {
  delete desc;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetRNNDescriptor_v8(cudnnRNNDescriptor_t desc, cudnnRNNAlgo_t algo,
                                       cudnnRNNMode_t mode, cudnnRNNBiasMode_t bias,
                                       cudnnDirectionMode_t direction,
                                       cudnnRNNInputMode_t input_mode, cudnnDataType_t data,
                                       cudnnDataType_t math_prec, cudnnMathType_t math,
                                       int32_t input, int32_t hidden, int32_t proj, int32_t layers,
                                       cudnnDropoutDescriptor_t dropout, uint32_t aux) {
  const std::string call = "cudnnSetRNNDescriptor_v8";
  if (!desc) return fail(CUDNN_STATUS_BAD_PARAM, call + ": null descriptor");
  if (input <= 0 || hidden <= 0 || layers <= 0)
    return fail(CUDNN_STATUS_BAD_PARAM, call + ": inputSize " + std::to_string(input) +
                                            ", hiddenSize " + std::to_string(hidden) +
                                            " and numLayers " + std::to_string(layers) +
                                            " must be positive");
  if (proj != hidden)
    return fail(CUDNN_STATUS_NOT_SUPPORTED,
                call + ": projSize " + std::to_string(proj) +
                    " differs from hiddenSize (the emulator has no recurrent projection)");
  // What the emulator computes; cuDNN has more (RELU/TANH cells, single biases, skip input,
  // dropout between layers), none of which sonata calls.
  if (mode != CUDNN_LSTM && mode != CUDNN_GRU)
    return fail(CUDNN_STATUS_NOT_SUPPORTED,
                call + ": cell mode " + std::to_string(mode) + " (the emulator has LSTM and GRU)");
  if (bias != CUDNN_RNN_DOUBLE_BIAS && bias != CUDNN_RNN_NO_BIAS)
    return fail(CUDNN_STATUS_NOT_SUPPORTED, call + ": bias mode " + std::to_string(bias) +
                                                " (the emulator has double or none)");
  if (input_mode != CUDNN_LINEAR_INPUT)
    return fail(CUDNN_STATUS_NOT_SUPPORTED, call + ": only CUDNN_LINEAR_INPUT is emulated");
  if (dropout)
    return fail(CUDNN_STATUS_NOT_SUPPORTED, call + ": dropout between layers is not emulated");
  if (algo != CUDNN_RNN_ALGO_STANDARD)
    return fail(CUDNN_STATUS_NOT_SUPPORTED, call + ": only CUDNN_RNN_ALGO_STANDARD is emulated");
  if (direction != CUDNN_UNIDIRECTIONAL && direction != CUDNN_BIDIRECTIONAL)
    return fail(CUDNN_STATUS_BAD_PARAM, call + ": direction " + std::to_string(direction));
  // cuDNN's documented pairs of data type and math precision.
  const bool prec_ok = data == CUDNN_DATA_DOUBLE  ? math_prec == CUDNN_DATA_DOUBLE
                       : data == CUDNN_DATA_FLOAT ? math_prec == CUDNN_DATA_FLOAT
                       : data == CUDNN_DATA_HALF
                           ? (math_prec == CUDNN_DATA_HALF || math_prec == CUDNN_DATA_FLOAT)
                           : false;
  if (!prec_ok)
    return fail(CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE,
                call + ": data type " + std::to_string(data) + " with math precision " +
                    std::to_string(math_prec) +
                    " (double/double, float/float, half/half or half/float)");
  if (math != CUDNN_DEFAULT_MATH && math != CUDNN_TENSOR_OP_MATH &&
      math != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION && math != CUDNN_FMA_MATH)
    return fail(CUDNN_STATUS_BAD_PARAM, call + ": math type " + std::to_string(math));
  if ((aux & ~uint32_t(CUDNN_RNN_PADDED_IO_ENABLED)) != 0)
    return fail(CUDNN_STATUS_BAD_PARAM, call + ": unknown auxFlags " + std::to_string(aux));
  desc->set = true;
  desc->mode = mode;
  desc->bias = bias;
  desc->direction = direction;
  desc->data = data;
  desc->math = math;
  desc->input = input;
  desc->hidden = hidden;
  desc->layers = layers;
  desc->aux = aux;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnCreateRNNDataDescriptor(cudnnRNNDataDescriptor_t* desc) {
  if (!desc) return fail(CUDNN_STATUS_BAD_PARAM, "cudnnCreateRNNDataDescriptor: null pointer");
  *desc = new cudnnRNNDataStruct;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnDestroyRNNDataDescriptor(cudnnRNNDataDescriptor_t desc) {
  delete desc;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetRNNDataDescriptor(cudnnRNNDataDescriptor_t desc, cudnnDataType_t type,
                                        cudnnRNNDataLayout_t layout, int max_seq, int batch,
                                        int vector, const int lengths[], void* fill) {
  const std::string call = "cudnnSetRNNDataDescriptor";
  if (!desc || !lengths) return fail(CUDNN_STATUS_BAD_PARAM, call + ": null argument");
  sonata::emu::Elem elem{};
  if (!elem_of(type, &elem) || type == CUDNN_DATA_BFLOAT16)
    return fail(CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE,
                call + ": data type " + std::to_string(type) + " (double, float or half)");
  if (layout != CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_UNPACKED &&
      layout != CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_PACKED &&
      layout != CUDNN_RNN_DATA_LAYOUT_BATCH_MAJOR_UNPACKED)
    return fail(CUDNN_STATUS_BAD_PARAM, call + ": layout " + std::to_string(layout));
  if (max_seq <= 0 || batch <= 0 || vector <= 0)
    return fail(CUDNN_STATUS_BAD_PARAM, call + ": maxSeqLength " + std::to_string(max_seq) +
                                            ", batchSize " + std::to_string(batch) +
                                            " and vectorSize " + std::to_string(vector) +
                                            " must be positive");
  std::vector<int> values(lengths, lengths + batch);
  for (int b = 0; b < batch; ++b) {
    if (values[size_t(b)] < 0 || values[size_t(b)] > max_seq)
      return fail(CUDNN_STATUS_BAD_PARAM, call + ": seqLengthArray[" + std::to_string(b) +
                                              "] = " + std::to_string(values[size_t(b)]) +
                                              " is outside [0, maxSeqLength " +
                                              std::to_string(max_seq) + "]");
    if (layout == CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_PACKED && b > 0 &&
        values[size_t(b)] > values[size_t(b - 1)])
      return fail(CUDNN_STATUS_BAD_PARAM,
                  call +
                      ": the packed layout needs non-increasing sequence lengths, but "
                      "seqLengthArray[" +
                      std::to_string(b) + "] > seqLengthArray[" + std::to_string(b - 1) + "]");
  }
  desc->set = true;
  desc->type = type;
  desc->layout = layout;
  desc->max_seq = max_seq;
  desc->batch = batch;
  desc->vector = vector;
  desc->lengths = std::move(values);
  desc->has_fill = fill != nullptr;
  // paddingFill is a host value of the data's type.
  desc->fill = !fill                       ? 0.0
               : type == CUDNN_DATA_DOUBLE ? *static_cast<const double*>(fill)
               : type == CUDNN_DATA_FLOAT  ? double(*static_cast<const float*>(fill))
                                           : sonata::emu::load_elem(elem, fill, 0);
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetRNNWeightSpaceSize(cudnnHandle_t handle, cudnnRNNDescriptor_t desc,
                                         size_t* bytes) {
  const char* call = "cudnnGetRNNWeightSpaceSize";
  if (!handle || !bytes) return fail(CUDNN_STATUS_BAD_PARAM, std::string(call) + ": null argument");
  RnnGeometry g;
  if (const cudnnStatus_t s = rnn_geometry(desc, call, &g); s != CUDNN_STATUS_SUCCESS) return s;
  *bytes = size_t(g.weight_elements()) * size_t(sonata::emu::elem_size(g.elem));
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetRNNWeightParams(cudnnHandle_t handle, cudnnRNNDescriptor_t desc,
                                      int32_t pseudo_layer, size_t weight_bytes,
                                      const void* weights, int32_t lin_layer,
                                      cudnnTensorDescriptor_t m_desc, void** m_addr,
                                      cudnnTensorDescriptor_t b_desc, void** b_addr) {
  const char* call = "cudnnGetRNNWeightParams";
  if (!handle) return fail(CUDNN_STATUS_BAD_PARAM, std::string(call) + ": null handle");
  RnnGeometry g;
  if (const cudnnStatus_t s = rnn_geometry(desc, call, &g); s != CUDNN_STATUS_SUCCESS) return s;
  const size_t elem_bytes = size_t(sonata::emu::elem_size(g.elem));
  if (weight_bytes < size_t(g.weight_elements()) * elem_bytes)
    return fail(CUDNN_STATUS_BAD_PARAM, std::string(call) + ": weightSpaceSize " +
                                            std::to_string(weight_bytes) + " is less than the " +
                                            std::to_string(g.weight_elements() * elem_bytes) +
                                            " bytes cudnnGetRNNWeightSpaceSize gives");
  if (pseudo_layer < 0 || pseudo_layer >= g.pseudo_layers())
    return fail(CUDNN_STATUS_BAD_PARAM, std::string(call) + ": pseudoLayer " +
                                            std::to_string(pseudo_layer) + " is outside [0, " +
                                            std::to_string(g.pseudo_layers()) + ")");
  if (lin_layer < 0 || lin_layer >= 2 * g.gates)
    return fail(CUDNN_STATUS_BAD_PARAM, std::string(call) + ": linLayerID " +
                                            std::to_string(lin_layer) + " is outside [0, " +
                                            std::to_string(2 * g.gates) + ")");
  char* base = static_cast<char*>(const_cast<void*>(weights));
  const cudnnDataType_t type = desc->data;
  if (m_addr) {
    *m_addr = base ? base + size_t(g.matrix_offset(pseudo_layer, lin_layer)) * elem_bytes : nullptr;
    if (m_desc) {
      const int cols = int(g.matrix_cols(pseudo_layer, lin_layer));
      const int dims[3] = {1, g.hidden, cols}, strides[3] = {g.hidden * cols, cols, 1};
      if (const cudnnStatus_t s = cudnnSetTensorNdDescriptor(m_desc, type, 3, dims, strides);
          s != CUDNN_STATUS_SUCCESS)
        return s;
    }
  }
  if (b_addr) {
    *b_addr = base && g.bias ? base + size_t(g.bias_offset(pseudo_layer, lin_layer)) * elem_bytes
                             : nullptr;
    if (b_desc && g.bias) {
      const int dims[3] = {1, g.hidden, 1}, strides[3] = {g.hidden, 1, 1};
      if (const cudnnStatus_t s = cudnnSetTensorNdDescriptor(b_desc, type, 3, dims, strides);
          s != CUDNN_STATUS_SUCCESS)
        return s;
    }
  }
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetRNNTempSpaceSizes(cudnnHandle_t handle, cudnnRNNDescriptor_t desc,
                                        cudnnForwardMode_t mode, cudnnRNNDataDescriptor_t x_desc,
                                        size_t* workspace, size_t* reserve) {
  const char* call = "cudnnGetRNNTempSpaceSizes";
  if (!handle || !x_desc || !x_desc->set)
    return fail(CUDNN_STATUS_BAD_PARAM,
                std::string(call) + ": null handle or unset RNN data descriptor");
  RnnGeometry g;
  if (const cudnnStatus_t s = rnn_geometry(desc, call, &g); s != CUDNN_STATUS_SUCCESS) return s;
  if (mode != CUDNN_FWD_MODE_INFERENCE && mode != CUDNN_FWD_MODE_TRAINING)
    return fail(CUDNN_STATUS_BAD_PARAM, std::string(call) + ": fwdMode " + std::to_string(mode));
  if (workspace) *workspace = rnn_workspace_bytes(g, *x_desc);
  if (reserve) *reserve = mode == CUDNN_FWD_MODE_TRAINING ? rnn_reserve_bytes(g, *x_desc) : 0;
  return CUDNN_STATUS_SUCCESS;
}

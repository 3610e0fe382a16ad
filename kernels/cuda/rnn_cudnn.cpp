// LSTM / GRU on CUDA through cuDNN's v8 RNN API (see rnn_cudnn.h). Descriptors are created
// around each call, as PyTorch does: they are host structures read when a call is enqueued.
// One cuDNN handle per device, never destroyed (static destructors may run after the CUDA
// context is gone), held under its mutex from cudnnSetStream to a pass's last call.
#include "kernels/cuda/rnn_cudnn.h"

#include "base/error.h"

#if SONATA_WITH_CUDNN
#include <cudnn.h>

#include <array>
#include <mutex>

#include "base/cuda_check.h"
#include "base/cudnn_check.h"
#include "base/math_mode.h"
#include "kernels/cuda/stream_scratch.h"
#endif

namespace sonata::kernels::cuda {

#if SONATA_WITH_CUDNN
namespace {

constexpr int kMaxDevices = 64;

struct DeviceRnnHandle {
  std::mutex mutex;
  cudnnHandle_t handle = nullptr;
};

// The device's handle, locked and bound to `stream` for the life of this object.
class BoundHandle {
 public:
  explicit BoundHandle(cudaStream_t stream) {
    static std::array<DeviceRnnHandle, kMaxDevices> per_device;
    int device = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    SONATA_CHECK(device >= 0 && device < kMaxDevices, "sonata::cuda::rnn: device ", device,
                 " is beyond the ", kMaxDevices, " devices the cuDNN handle cache holds");
    DeviceRnnHandle& slot = per_device[size_t(device)];
    lock_ = std::unique_lock<std::mutex>(slot.mutex);
    if (!slot.handle) CUDNN_CHECK(cudnnCreate(&slot.handle));
    CUDNN_CHECK(cudnnSetStream(slot.handle, stream));
    handle_ = slot.handle;
  }
  cudnnHandle_t get() const { return handle_; }

 private:
  std::unique_lock<std::mutex> lock_;
  cudnnHandle_t handle_ = nullptr;
};

cudnnDataType_t data_type(DType dtype) {
  switch (dtype) {
    case DType::f16:
      return CUDNN_DATA_HALF;
    case DType::f32:
      return CUDNN_DATA_FLOAT;
    case DType::f64:
      return CUDNN_DATA_DOUBLE;
    default:
      break;
  }
  throw Error(str("sonata::cuda::rnn: dtype ", dtype_name(dtype),
                  " is not supported by the cuDNN RNN path (use f16, f32 or f64)"));
}

class RnnDescriptor {
 public:
  RnnDescriptor(DType dtype, const RnnShape& s) {
    CUDNN_CHECK(cudnnCreateRNNDescriptor(&desc_));
    const cudnnDataType_t data = data_type(dtype);
    // PyTorch's choices: fp16 data computes in fp32 on tensor cores; fp32 may use TF32
    // where cudnn.allow_tf32 says (sonata's --tf32 conv|all), else FMA only.
    const cudnnDataType_t math_prec = data == CUDNN_DATA_HALF ? CUDNN_DATA_FLOAT : data;
    const cudnnMathType_t math = data == CUDNN_DATA_HALF ? CUDNN_TENSOR_OP_MATH
                                 : data == CUDNN_DATA_FLOAT && !tf32_allowed_in_conv()
                                     ? CUDNN_FMA_MATH
                                     : CUDNN_DEFAULT_MATH;
    const auto hidden = int32_t(s.hidden);
    const cudnnStatus_t status = cudnnSetRNNDescriptor_v8(
        desc_, CUDNN_RNN_ALGO_STANDARD, s.cell == RnnCell::lstm ? CUDNN_LSTM : CUDNN_GRU,
        s.bias ? CUDNN_RNN_DOUBLE_BIAS : CUDNN_RNN_NO_BIAS,
        s.bidirectional ? CUDNN_BIDIRECTIONAL : CUDNN_UNIDIRECTIONAL, CUDNN_LINEAR_INPUT, data,
        math_prec, math, int32_t(s.input), hidden, hidden, int32_t(s.layers), nullptr,
        CUDNN_RNN_PADDED_IO_ENABLED);
    if (status != CUDNN_STATUS_SUCCESS) cudnnDestroyRNNDescriptor(desc_);
    CUDNN_CHECK(status);
  }
  RnnDescriptor(const RnnDescriptor&) = delete;
  RnnDescriptor& operator=(const RnnDescriptor&) = delete;
  ~RnnDescriptor() { cudnnDestroyRNNDescriptor(desc_); }
  cudnnRNNDescriptor_t get() const { return desc_; }

 private:
  cudnnRNNDescriptor_t desc_ = nullptr;
};

// [T, N, vector] sequence-major padded data; padded frames filled with 0 on output.
class DataDescriptor {
 public:
  DataDescriptor(DType dtype, int64_t steps, const std::vector<int32_t>& lengths, int64_t vector) {
    CUDNN_CHECK(cudnnCreateRNNDataDescriptor(&desc_));
    double zero_d = 0;
    float zero_f = 0;
    uint16_t zero_h = 0;
    void* fill = dtype == DType::f64   ? static_cast<void*>(&zero_d)
                 : dtype == DType::f32 ? static_cast<void*>(&zero_f)
                                       : static_cast<void*>(&zero_h);
    const cudnnStatus_t status = cudnnSetRNNDataDescriptor(
        desc_, data_type(dtype), CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_UNPACKED, int(steps),
        int(lengths.size()), int(vector), lengths.data(), fill);
    if (status != CUDNN_STATUS_SUCCESS) cudnnDestroyRNNDataDescriptor(desc_);
    CUDNN_CHECK(status);
  }
  DataDescriptor(const DataDescriptor&) = delete;
  DataDescriptor& operator=(const DataDescriptor&) = delete;
  ~DataDescriptor() { cudnnDestroyRNNDataDescriptor(desc_); }
  cudnnRNNDataDescriptor_t get() const { return desc_; }

 private:
  cudnnRNNDataDescriptor_t desc_ = nullptr;
};

class TensorDescriptor {
 public:
  TensorDescriptor() { CUDNN_CHECK(cudnnCreateTensorDescriptor(&desc_)); }
  // A packed 3-d [a, b, c].
  TensorDescriptor(DType dtype, int a, int b, int c) : TensorDescriptor() {
    const int dims[3] = {a, b, c}, strides[3] = {b * c, c, 1};
    CUDNN_CHECK(cudnnSetTensorNdDescriptor(desc_, data_type(dtype), 3, dims, strides));
  }
  TensorDescriptor(const TensorDescriptor&) = delete;
  TensorDescriptor& operator=(const TensorDescriptor&) = delete;
  ~TensorDescriptor() { cudnnDestroyTensorDescriptor(desc_); }
  cudnnTensorDescriptor_t get() const { return desc_; }

 private:
  cudnnTensorDescriptor_t desc_ = nullptr;
};

// Everything one call needs: descriptors and the sizes cuDNN asks for.
struct RnnCall {
  RnnCall(DType dtype, const RnnShape& s, int64_t steps, const std::vector<int32_t>& lengths,
          cudaStream_t stream)
      : handle(stream),
        rnn(dtype, s),
        x(dtype, steps, lengths, s.input),
        y(dtype, steps, lengths, s.directions() * s.hidden),
        states(dtype, int(s.layers * s.directions()), int(lengths.size()), int(s.hidden)) {
    CUDNN_CHECK(cudnnGetRNNWeightSpaceSize(handle.get(), rnn.get(), &weight_bytes));
    CUDNN_CHECK(cudnnGetRNNTempSpaceSizes(handle.get(), rnn.get(), CUDNN_FWD_MODE_TRAINING, x.get(),
                                          &workspace_bytes, &reserve_bytes));
  }
  BoundHandle handle;
  RnnDescriptor rnn;
  DataDescriptor x, y;
  TensorDescriptor states;
  size_t weight_bytes = 0, workspace_bytes = 0, reserve_bytes = 0;
};

void check_lengths(const std::vector<int32_t>& lengths, int64_t steps) {
  SONATA_CHECK(!lengths.empty(), "sonata::cuda::rnn: the batch is empty");
  for (size_t b = 0; b < lengths.size(); ++b)
    SONATA_CHECK(lengths[b] >= 0 && lengths[b] <= steps, "sonata::cuda::rnn: lengths[", b,
                 "] = ", lengths[b], " is outside [0, ", steps, "]");
}

}  // namespace

bool rnn_cudnn_supports(DType dtype) {
  return dtype == DType::f16 || dtype == DType::f32 || dtype == DType::f64;
}

size_t rnn_weight_space_bytes(DType dtype, const RnnShape& shape, cudaStream_t stream) {
  BoundHandle handle(stream);
  RnnDescriptor rnn(dtype, shape);
  size_t bytes = 0;
  CUDNN_CHECK(cudnnGetRNNWeightSpaceSize(handle.get(), rnn.get(), &bytes));
  return bytes;
}

RnnWeightLayout rnn_weight_layout(DType dtype, const RnnShape& s, const void* weights,
                                  cudaStream_t stream) {
  BoundHandle handle(stream);
  RnnDescriptor rnn(dtype, s);
  RnnWeightLayout layout;
  CUDNN_CHECK(cudnnGetRNNWeightSpaceSize(handle.get(), rnn.get(), &layout.bytes));
  const auto* base = static_cast<const char*>(weights);
  const int64_t elem = int64_t(dtype_size(dtype));
  const int64_t gates = s.gates(), params = s.bias ? 4 : 2;
  TensorDescriptor matrix, bias;
  for (int64_t p = 0; p < s.layers * s.directions(); ++p) {
    std::vector<std::vector<int64_t>> per_param(static_cast<size_t>(params),
                                                std::vector<int64_t>(static_cast<size_t>(gates)));
    // linLayerID g < G: the input-side matrix and bias of gate g; G + g: the recurrent side.
    for (int64_t id = 0; id < 2 * gates; ++id) {
      void* m = nullptr;
      void* b = nullptr;
      CUDNN_CHECK(cudnnGetRNNWeightParams(handle.get(), rnn.get(), int32_t(p), layout.bytes,
                                          weights, int32_t(id), matrix.get(), &m, bias.get(),
                                          s.bias ? &b : nullptr));
      SONATA_CHECK(m != nullptr && (!s.bias || b != nullptr),
                   "sonata::cuda::rnn: cuDNN gave no address for pseudo-layer ", p, " linLayerID ",
                   id);
      const bool recurrent = id >= gates;
      const size_t gate = size_t(id % gates);
      per_param[recurrent ? 1 : 0][gate] = (static_cast<const char*>(m) - base) / elem;
      if (s.bias) per_param[recurrent ? 3 : 2][gate] = (static_cast<const char*>(b) - base) / elem;
    }
    layout.offsets.push_back(std::move(per_param));
  }
  return layout;
}

size_t rnn_reserve_bytes(DType dtype, const RnnShape& shape, int64_t steps,
                         const std::vector<int32_t>& lengths, cudaStream_t stream) {
  check_lengths(lengths, steps);
  return RnnCall(dtype, shape, steps, lengths, stream).reserve_bytes;
}

void rnn_forward(DType dtype, const RnnShape& shape, int64_t steps,
                 const std::vector<int32_t>& lengths, const int32_t* dev_lengths, const void* x,
                 const void* hx, const void* cx, const void* weights, void* y, void* hy, void* cy,
                 void* reserve, size_t reserve_bytes, cudaStream_t stream) {
  check_lengths(lengths, steps);
  RnnCall call(dtype, shape, steps, lengths, stream);
  const bool training = reserve != nullptr;
  if (training)
    SONATA_CHECK(reserve_bytes >= call.reserve_bytes, "sonata::cuda::rnn: reserve space of ",
                 reserve_bytes, " bytes is smaller than the ", call.reserve_bytes, " cuDNN needs");
  StreamScratch workspace(call.workspace_bytes, stream);
  const bool lstm = shape.cell == RnnCell::lstm;
  CUDNN_CHECK(cudnnRNNForward(call.handle.get(), call.rnn.get(),
                              training ? CUDNN_FWD_MODE_TRAINING : CUDNN_FWD_MODE_INFERENCE,
                              dev_lengths, call.x.get(), x, call.y.get(), y, call.states.get(), hx,
                              hy, lstm ? call.states.get() : nullptr, lstm ? cx : nullptr,
                              lstm ? cy : nullptr, call.weight_bytes, weights, call.workspace_bytes,
                              workspace.data(), training ? reserve_bytes : 0, reserve));
}

void rnn_backward(DType dtype, const RnnShape& shape, int64_t steps,
                  const std::vector<int32_t>& lengths, const int32_t* dev_lengths, const void* x,
                  const void* hx, const void* cx, const void* weights, const void* y,
                  const void* dy, const void* dhy, const void* dcy, void* dx, void* dhx, void* dcx,
                  void* dweights, void* reserve, size_t reserve_bytes, cudaStream_t stream) {
  check_lengths(lengths, steps);
  RnnCall call(dtype, shape, steps, lengths, stream);
  SONATA_CHECK(reserve_bytes >= call.reserve_bytes, "sonata::cuda::rnn: reserve space of ",
               reserve_bytes, " bytes is smaller than the ", call.reserve_bytes, " cuDNN needs");
  StreamScratch workspace(call.workspace_bytes, stream);
  const bool lstm = shape.cell == RnnCell::lstm;
  cudnnTensorDescriptor_t c_desc = lstm ? call.states.get() : nullptr;
  CUDNN_CHECK(cudnnRNNBackwardData_v8(
      call.handle.get(), call.rnn.get(), dev_lengths, call.y.get(), y, dy, call.x.get(), dx,
      call.states.get(), hx, dhy, dhx, c_desc, lstm ? cx : nullptr, lstm ? dcy : nullptr,
      lstm ? dcx : nullptr, call.weight_bytes, weights, call.workspace_bytes, workspace.data(),
      reserve_bytes, reserve));
  // Documented order: backward weights after backward data, with the same reserve space.
  CUDNN_CHECK(cudnnRNNBackwardWeights_v8(
      call.handle.get(), call.rnn.get(), CUDNN_WGRAD_MODE_ADD, dev_lengths, call.x.get(), x,
      call.states.get(), hx, call.y.get(), y, call.weight_bytes, dweights, call.workspace_bytes,
      workspace.data(), reserve_bytes, reserve));
}

#else  // !SONATA_WITH_CUDNN

namespace {
[[noreturn]] void no_cudnn() {
  throw Error(
      "sonata::cuda::rnn: cuDNN was not found at build time, so the cuDNN RNN path cannot run "
      "(the layers fall back to their per-step kernels)");
}
}  // namespace

bool rnn_cudnn_supports(DType) {
  return false;
}
size_t rnn_weight_space_bytes(DType, const RnnShape&, cudaStream_t) {
  no_cudnn();
}
RnnWeightLayout rnn_weight_layout(DType, const RnnShape&, const void*, cudaStream_t) {
  no_cudnn();
}
size_t rnn_reserve_bytes(DType, const RnnShape&, int64_t, const std::vector<int32_t>&,
                         cudaStream_t) {
  no_cudnn();
}
void rnn_forward(DType, const RnnShape&, int64_t, const std::vector<int32_t>&, const int32_t*,
                 const void*, const void*, const void*, const void*, void*, void*, void*, void*,
                 size_t, cudaStream_t) {
  no_cudnn();
}
void rnn_backward(DType, const RnnShape&, int64_t, const std::vector<int32_t>&, const int32_t*,
                  const void*, const void*, const void*, const void*, const void*, const void*,
                  const void*, const void*, void*, void*, void*, void*, void*, size_t,
                  cudaStream_t) {
  no_cudnn();
}

#endif

}  // namespace sonata::kernels::cuda

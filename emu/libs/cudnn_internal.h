#pragma once
// The emulated cuDNN's descriptors and the pieces its calls share (emu/libs/cudnn_*.cpp).
#include <cudnn.h>

#include <cstdint>
#include <string>

#include "emu/libs/internal.h"
#include "emu/libs/numeric.h"

struct cudnnContext {
  int device = 0;
  cudaStream_t stream = nullptr;
};

struct cudnnTensorStruct {
  bool set = false;
  cudnnDataType_t type = CUDNN_DATA_FLOAT;
  int n = 0, c = 0, h = 0, w = 0;
  int64_t ns = 0, cs = 0, hs = 0, ws = 0;  // element strides
};

struct cudnnFilterStruct {
  bool set = false;
  cudnnDataType_t type = CUDNN_DATA_FLOAT;
  cudnnTensorFormat_t format = CUDNN_TENSOR_NCHW;
  int k = 0, c = 0, h = 0, w = 0;
};

struct cudnnConvolutionStruct {
  bool set = false;
  int pad_h = 0, pad_w = 0, u = 1, v = 1, dil_h = 1, dil_w = 1;
  cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
  int groups = 1;
};

namespace sonata::emu::dnn {

cudnnStatus_t fail(cudnnStatus_t status, const std::string& message);

// A 4-d operand as the loops index it: logical (n, c, h, w) with element strides.
struct View {
  void* data = nullptr;
  Elem elem = Elem::f32;
  int64_t n = 0, c = 0, h = 0, w = 0;
  int64_t ns = 0, cs = 0, hs = 0, ws = 0;
  int64_t offset(int64_t in, int64_t ic, int64_t ih, int64_t iw) const {
    return in * ns + ic * cs + ih * hs + iw * ws;
  }
  MemRange range() const;  // every byte the view spans
};

bool elem_of(cudnnDataType_t type, Elem* elem);
View tensor_view(const cudnnTensorStruct& t, const void* data);
View filter_view(const cudnnFilterStruct& f, const void* data);

// The geometry of one convolution, checked for consistency between its descriptors.
struct ConvGeometry {
  View x, w, y;
  const cudnnConvolutionStruct* conv = nullptr;
  bool tf32 = false;              // fp32 operands rounded to TF32 (tensor cores allowed)
  bool to_half = false;           // fp32 operands down-converted to fp16 (ALLOW_CONVERSION)
  bool float_accumulate = false;  // fp16/bf16: accumulate in fp32, not double
  bool f64 = false;
};

// Checks the descriptors of a convolution (data types, channels, output size) and fills in
// its geometry; `call` names the function in the error.
cudnnStatus_t geometry(const cudnnTensorStruct* x, const cudnnFilterStruct* w,
                       const cudnnConvolutionStruct* conv, const cudnnTensorStruct* y,
                       const char* call, ConvGeometry* out);

// The passes, computed by direct loops: out = alpha * result + beta * out.
enum class Pass { forward, backward_data, backward_filter };
void convolve(Pass pass, const ConvGeometry& g, double alpha, double beta);

// What one pass of the convolution computes and moves, for the emulated profile: 2 N K P Q
// (C / groups) R S FLOPs, every pass alike, on the tensor cores where the algorithm may use
// them (`tensor_cores`) and the math allows (TF32 for fp32, fp16/bf16 MMA).
WorkCost conv_cost(const ConvGeometry& g, bool tensor_cores);

// Supported algorithms with their emulated workspace sizes, and their order.
struct AlgoInfo {
  bool supported = false;
  size_t workspace = 0;
  bool deterministic = true;
  bool tensor_cores = false;  // may run on tensor cores (TF32 for fp32, fp16/bf16 MMA)
};
int algo_count(Pass pass);
AlgoInfo algo_info(Pass pass, int algo, const ConvGeometry& g);
const char* pass_call(Pass pass);

// The handle's stream belongs to its device (a handle serves the device current at
// cudnnCreate); `call` names the function in the error.
cudnnStatus_t check_stream(cudnnHandle_t handle, const char* call);

}  // namespace sonata::emu::dnn

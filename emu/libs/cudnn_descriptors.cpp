// The emulated cuDNN's handles and descriptors, and the geometry checks of a convolution.
#include <algorithm>
#include <memory>

#include "emu/libs/cudnn_internal.h"

namespace sonata::emu::dnn {

cudnnStatus_t fail(cudnnStatus_t status, const std::string& message) {
  library_log("cuDNN", message + " (" + cudnnGetErrorString(status) + ")");
  return status;
}

bool elem_of(cudnnDataType_t type, Elem* elem) {
  switch (type) {
    case CUDNN_DATA_FLOAT:
      *elem = Elem::f32;
      return true;
    case CUDNN_DATA_DOUBLE:
      *elem = Elem::f64;
      return true;
    case CUDNN_DATA_HALF:
      *elem = Elem::f16;
      return true;
    case CUDNN_DATA_BFLOAT16:
      *elem = Elem::bf16;
      return true;
    default:
      return false;
  }
}

MemRange View::range() const {
  if (n <= 0 || c <= 0 || h <= 0 || w <= 0) return {data, 0};
  const int64_t last = offset(n - 1, c - 1, h - 1, w - 1);
  return {data, size_t((last + 1) * elem_size(elem))};
}

View tensor_view(const cudnnTensorStruct& t, const void* data) {
  View v;
  v.data = const_cast<void*>(data);
  elem_of(t.type, &v.elem);
  v.n = t.n, v.c = t.c, v.h = t.h, v.w = t.w;
  v.ns = t.ns, v.cs = t.cs, v.hs = t.hs, v.ws = t.ws;
  return v;
}

View filter_view(const cudnnFilterStruct& f, const void* data) {
  View v;
  v.data = const_cast<void*>(data);
  elem_of(f.type, &v.elem);
  v.n = f.k, v.c = f.c, v.h = f.h, v.w = f.w;
  if (f.format == CUDNN_TENSOR_NHWC) {  // [k, h, w, c]
    v.cs = 1, v.ws = f.c, v.hs = int64_t(f.w) * f.c, v.ns = int64_t(f.h) * f.w * f.c;
  } else {  // [k, c, h, w]
    v.ws = 1, v.hs = f.w, v.cs = int64_t(f.h) * f.w, v.ns = int64_t(f.c) * f.h * f.w;
  }
  return v;
}

namespace {
int64_t out_dim(int64_t in, int pad, int filter, int dil, int stride) {
  return (in + 2 * pad - (int64_t(dil) * (filter - 1) + 1)) / stride + 1;
}
}  // namespace

WorkCost conv_cost(const ConvGeometry& g, bool tensor_cores) {
  const double flops = 2.0 * double(g.y.n) * double(g.w.n) * double(g.y.h * g.y.w) * double(g.w.c) *
                       double(g.w.h * g.w.w);
  const double bytes = double(elem_size(g.x.elem)) * double(g.x.n * g.x.c * g.x.h * g.x.w) +
                       double(elem_size(g.w.elem)) * double(g.w.n * g.w.c * g.w.h * g.w.w) +
                       double(elem_size(g.y.elem)) * double(g.y.n * g.y.c * g.y.h * g.y.w);
  const bool half = g.x.elem == Elem::f16 || g.x.elem == Elem::bf16 || g.to_half;
  const char* math = g.f64                    ? "fp64"
                     : half && tensor_cores   ? "tensor16"
                     : g.tf32 && tensor_cores ? "tf32"
                                              : "fp32";
  return {.flops = flops, .bytes = bytes, .math = math, .library = "cudnn.conv"};
}

cudnnStatus_t geometry(const cudnnTensorStruct* x, const cudnnFilterStruct* w,
                       const cudnnConvolutionStruct* conv, const cudnnTensorStruct* y,
                       const char* call, ConvGeometry* out) {
  const std::string c = call;
  if (!x || !w || !conv || !y || !x->set || !w->set || !conv->set || !y->set)
    return fail(CUDNN_STATUS_BAD_PARAM, c + ": a descriptor is null or was never set");
  if (x->type != w->type || x->type != y->type)
    return fail(CUDNN_STATUS_BAD_PARAM,
                c + ": x, w and y have different data types (" + std::to_string(x->type) + ", " +
                    std::to_string(w->type) + ", " + std::to_string(y->type) + ")");
  Elem elem{};
  if (!elem_of(x->type, &elem))
    return fail(CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE,
                c + ": data type " + std::to_string(x->type) + " (use float, double, half, bf16)");
  const bool compute_ok =
      (x->type == CUDNN_DATA_DOUBLE) ? conv->compute == CUDNN_DATA_DOUBLE
      : (x->type == CUDNN_DATA_FLOAT || x->type == CUDNN_DATA_BFLOAT16)
          ? conv->compute == CUDNN_DATA_FLOAT
          : (conv->compute == CUDNN_DATA_FLOAT || conv->compute == CUDNN_DATA_HALF);
  if (!compute_ok)
    return fail(CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE,
                c + ": compute type " + std::to_string(conv->compute) + " with data type " +
                    std::to_string(x->type));
  if (x->c != w->c * conv->groups || w->k % conv->groups != 0)
    return fail(CUDNN_STATUS_BAD_PARAM,
                c + ": x has " + std::to_string(x->c) + " channels but the filter takes " +
                    std::to_string(w->c) + " x " + std::to_string(conv->groups) + " groups");
  const int64_t ho = out_dim(x->h, conv->pad_h, w->h, conv->dil_h, conv->u);
  const int64_t wo = out_dim(x->w, conv->pad_w, w->w, conv->dil_w, conv->v);
  if (y->n != x->n || y->c != w->k || y->h != ho || y->w != wo)
    return fail(CUDNN_STATUS_BAD_PARAM,
                c + ": y is " + std::to_string(y->n) + "x" + std::to_string(y->c) + "x" +
                    std::to_string(y->h) + "x" + std::to_string(y->w) +
                    " but the convolution gives " + std::to_string(x->n) + "x" +
                    std::to_string(w->k) + "x" + std::to_string(ho) + "x" + std::to_string(wo));
  out->x = tensor_view(*x, nullptr);
  out->w = filter_view(*w, nullptr);
  out->y = tensor_view(*y, nullptr);
  out->conv = conv;
  out->f64 = elem == Elem::f64;
  out->float_accumulate = elem == Elem::f16 || elem == Elem::bf16;
  if (elem == Elem::f32) {
    out->tf32 = conv->math != CUDNN_FMA_MATH && conv->math != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
    out->to_half = conv->math == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
  }
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t check_stream(cudnnHandle_t handle, const char* call) {
  if (!handle) return fail(CUDNN_STATUS_BAD_PARAM, std::string(call) + ": null handle");
  const int device = stream_device_for(handle->stream, call);
  if (device != handle->device)
    return fail(CUDNN_STATUS_BAD_PARAM_STREAM_MISMATCH,
                std::string(call) + ": the handle was created on device " +
                    std::to_string(handle->device) + " but its stream belongs to device " +
                    std::to_string(device));
  return CUDNN_STATUS_SUCCESS;
}

}  // namespace sonata::emu::dnn

using sonata::emu::dnn::fail;

size_t cudnnGetVersion(void) {
  return CUDNN_VERSION;
}

const char* cudnnGetErrorString(cudnnStatus_t status) {
  switch (status) {
#define SONATA_EMU_STATUS(name) \
  case name:                    \
    return #name;
    SONATA_EMU_STATUS(CUDNN_STATUS_SUCCESS)
    SONATA_EMU_STATUS(CUDNN_STATUS_NOT_INITIALIZED)
    SONATA_EMU_STATUS(CUDNN_STATUS_BAD_PARAM)
    SONATA_EMU_STATUS(CUDNN_STATUS_BAD_PARAM_NULL_POINTER)
    SONATA_EMU_STATUS(CUDNN_STATUS_BAD_PARAM_STREAM_MISMATCH)
    SONATA_EMU_STATUS(CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH)
    SONATA_EMU_STATUS(CUDNN_STATUS_BAD_PARAM_SIZE_INSUFFICIENT)
    SONATA_EMU_STATUS(CUDNN_STATUS_NOT_SUPPORTED)
    SONATA_EMU_STATUS(CUDNN_STATUS_NOT_SUPPORTED_SHAPE)
    SONATA_EMU_STATUS(CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE)
    SONATA_EMU_STATUS(CUDNN_STATUS_NOT_SUPPORTED_LAYOUT)
    SONATA_EMU_STATUS(CUDNN_STATUS_INTERNAL_ERROR)
    SONATA_EMU_STATUS(CUDNN_STATUS_EXECUTION_FAILED)
#undef SONATA_EMU_STATUS
    default:
      return "CUDNN_STATUS_UNKNOWN";
  }
}

cudnnStatus_t cudnnCreate(cudnnHandle_t* handle) {
  if (!handle) return fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "cudnnCreate: null handle pointer");
  auto context = std::make_unique<cudnnContext>();
  context->device = sonata::emu::device_for("cudnnCreate");
  if (context->device < 0)
    return fail(CUDNN_STATUS_NOT_INITIALIZED, "cudnnCreate: no device for this thread");
  *handle = context.release();
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnDestroy(cudnnHandle_t handle) {
  delete handle;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetStream(cudnnHandle_t handle, cudaStream_t stream) {
  if (!handle) return fail(CUDNN_STATUS_BAD_PARAM, "cudnnSetStream: null handle");
  const int device = sonata::emu::stream_device_for(stream, "cudnnSetStream");
  if (device != handle->device)
    return fail(CUDNN_STATUS_BAD_PARAM_STREAM_MISMATCH,
                "cudnnSetStream: the stream belongs to device " + std::to_string(device) +
                    " but the handle was created on device " + std::to_string(handle->device));
  handle->stream = stream;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetStream(cudnnHandle_t handle, cudaStream_t* stream) {
  if (!handle || !stream) return fail(CUDNN_STATUS_BAD_PARAM, "cudnnGetStream: null argument");
  *stream = handle->stream;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnCreateTensorDescriptor(cudnnTensorDescriptor_t* desc) {
  if (!desc) return fail(CUDNN_STATUS_BAD_PARAM, "cudnnCreateTensorDescriptor: null pointer");
  *desc = new cudnnTensorStruct;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnDestroyTensorDescriptor(cudnnTensorDescriptor_t desc) {
  delete desc;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetTensor4dDescriptorEx(cudnnTensorDescriptor_t desc, cudnnDataType_t type,
                                           int n, int c, int h, int w, int ns, int cs, int hs,
                                           int ws) {
  if (!desc) return fail(CUDNN_STATUS_BAD_PARAM, "cudnnSetTensor4dDescriptor: null descriptor");
  sonata::emu::Elem elem{};
  if (!sonata::emu::dnn::elem_of(type, &elem))
    return fail(CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE,
                "cudnnSetTensor4dDescriptor: data type " + std::to_string(type));
  if (n <= 0 || c <= 0 || h <= 0 || w <= 0 || ns <= 0 || cs <= 0 || hs <= 0 || ws <= 0)
    return fail(CUDNN_STATUS_BAD_PARAM,
                "cudnnSetTensor4dDescriptor: dimensions and strides must be positive (" +
                    std::to_string(n) + "x" + std::to_string(c) + "x" + std::to_string(h) + "x" +
                    std::to_string(w) + ")");
  *desc = {true, type, n, c, h, w, ns, cs, hs, ws};
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetTensor4dDescriptor(cudnnTensorDescriptor_t desc, cudnnTensorFormat_t format,
                                         cudnnDataType_t type, int n, int c, int h, int w) {
  if (format == CUDNN_TENSOR_NCHW)
    return cudnnSetTensor4dDescriptorEx(desc, type, n, c, h, w, c * h * w, h * w, w, 1);
  if (format == CUDNN_TENSOR_NHWC)
    return cudnnSetTensor4dDescriptorEx(desc, type, n, c, h, w, h * w * c, 1, w * c, c);
  return fail(CUDNN_STATUS_NOT_SUPPORTED_LAYOUT, "cudnnSetTensor4dDescriptor: format " +
                                                     std::to_string(format) +
                                                     " (the emulator takes NCHW and NHWC)");
}

cudnnStatus_t cudnnGetTensor4dDescriptor(const cudnnTensorDescriptor_t desc, cudnnDataType_t* type,
                                         int* n, int* c, int* h, int* w, int* ns, int* cs, int* hs,
                                         int* ws) {
  if (!desc || !desc->set)
    return fail(CUDNN_STATUS_BAD_PARAM, "cudnnGetTensor4dDescriptor: descriptor never set");
  *type = desc->type;
  *n = desc->n, *c = desc->c, *h = desc->h, *w = desc->w;
  *ns = int(desc->ns), *cs = int(desc->cs), *hs = int(desc->hs), *ws = int(desc->ws);
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnCreateFilterDescriptor(cudnnFilterDescriptor_t* desc) {
  if (!desc) return fail(CUDNN_STATUS_BAD_PARAM, "cudnnCreateFilterDescriptor: null pointer");
  *desc = new cudnnFilterStruct;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnDestroyFilterDescriptor(cudnnFilterDescriptor_t desc) {
  delete desc;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetFilter4dDescriptor(cudnnFilterDescriptor_t desc, cudnnDataType_t type,
                                         cudnnTensorFormat_t format, int k, int c, int h, int w) {
  if (!desc) return fail(CUDNN_STATUS_BAD_PARAM, "cudnnSetFilter4dDescriptor: null descriptor");
  sonata::emu::Elem elem{};
  if (!sonata::emu::dnn::elem_of(type, &elem))
    return fail(CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE,
                "cudnnSetFilter4dDescriptor: data type " + std::to_string(type));
  if (format != CUDNN_TENSOR_NCHW && format != CUDNN_TENSOR_NHWC)
    return fail(CUDNN_STATUS_NOT_SUPPORTED_LAYOUT,
                "cudnnSetFilter4dDescriptor: format " + std::to_string(format));
  if (k <= 0 || c <= 0 || h <= 0 || w <= 0)
    return fail(CUDNN_STATUS_BAD_PARAM, "cudnnSetFilter4dDescriptor: dimensions must be positive");
  *desc = {true, type, format, k, c, h, w};
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnCreateConvolutionDescriptor(cudnnConvolutionDescriptor_t* desc) {
  if (!desc) return fail(CUDNN_STATUS_BAD_PARAM, "cudnnCreateConvolutionDescriptor: null pointer");
  *desc = new cudnnConvolutionStruct;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnDestroyConvolutionDescriptor(cudnnConvolutionDescriptor_t desc) {
  delete desc;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetConvolution2dDescriptor(cudnnConvolutionDescriptor_t desc, int pad_h,
                                              int pad_w, int u, int v, int dil_h, int dil_w,
                                              cudnnConvolutionMode_t mode,
                                              cudnnDataType_t compute) {
  if (!desc)
    return fail(CUDNN_STATUS_BAD_PARAM, "cudnnSetConvolution2dDescriptor: null descriptor");
  if (pad_h < 0 || pad_w < 0 || u <= 0 || v <= 0 || dil_h <= 0 || dil_w <= 0)
    return fail(CUDNN_STATUS_BAD_PARAM,
                "cudnnSetConvolution2dDescriptor: negative padding or non-positive stride or "
                "dilation");
  if (mode != CUDNN_CONVOLUTION && mode != CUDNN_CROSS_CORRELATION)
    return fail(CUDNN_STATUS_BAD_PARAM, "cudnnSetConvolution2dDescriptor: invalid mode");
  desc->set = true;
  desc->pad_h = pad_h, desc->pad_w = pad_w, desc->u = u, desc->v = v;
  desc->dil_h = dil_h, desc->dil_w = dil_w, desc->mode = mode, desc->compute = compute;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetConvolutionMathType(cudnnConvolutionDescriptor_t desc, cudnnMathType_t math) {
  if (!desc) return fail(CUDNN_STATUS_BAD_PARAM, "cudnnSetConvolutionMathType: null descriptor");
  if (math < CUDNN_DEFAULT_MATH || math > CUDNN_FMA_MATH)
    return fail(CUDNN_STATUS_BAD_PARAM, "cudnnSetConvolutionMathType: invalid math type");
  desc->math = math;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolutionMathType(cudnnConvolutionDescriptor_t desc,
                                          cudnnMathType_t* math) {
  if (!desc || !math) return fail(CUDNN_STATUS_BAD_PARAM, "cudnnGetConvolutionMathType: null");
  *math = desc->math;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetConvolutionGroupCount(cudnnConvolutionDescriptor_t desc, int groups) {
  if (!desc || groups < 1)
    return fail(CUDNN_STATUS_BAD_PARAM, "cudnnSetConvolutionGroupCount: invalid group count");
  desc->groups = groups;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolution2dForwardOutputDim(const cudnnConvolutionDescriptor_t conv,
                                                    const cudnnTensorDescriptor_t x,
                                                    const cudnnFilterDescriptor_t w, int* n, int* c,
                                                    int* h, int* ww) {
  if (!conv || !x || !w || !conv->set || !x->set || !w->set)
    return fail(CUDNN_STATUS_BAD_PARAM,
                "cudnnGetConvolution2dForwardOutputDim: a descriptor is null or never set");
  if (x->c != w->c * conv->groups)
    return fail(CUDNN_STATUS_BAD_PARAM,
                "cudnnGetConvolution2dForwardOutputDim: x has " + std::to_string(x->c) +
                    " channels but the filter takes " + std::to_string(w->c));
  *n = x->n;
  *c = w->k;
  *h = int((x->h + 2 * conv->pad_h - (conv->dil_h * (w->h - 1) + 1)) / conv->u + 1);
  *ww = int((x->w + 2 * conv->pad_w - (conv->dil_w * (w->w - 1) + 1)) / conv->v + 1);
  if (*h <= 0 || *ww <= 0)
    return fail(
        CUDNN_STATUS_BAD_PARAM,
        "cudnnGetConvolution2dForwardOutputDim: the filter is larger than the padded input");
  return CUDNN_STATUS_SUCCESS;
}

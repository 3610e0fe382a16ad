// conv2d on CUDA through cuDNN's convolution API (host code; the bias kernels are in
// conv_bias.cu).
//
// Algorithms come from cuDNN's heuristics (cudnnGet*Algorithm_v7), not from timing runs
// (cudnnFind*): the heuristics need no buffers and no device synchronisation, so choosing
// never stalls the step loop. The first candidate that runs in the requested math mode and
// fits the 256 MiB workspace cap is taken, once per (device, dtype, shape), and cached.
//
// Math: f16 and bf16 run on tensor cores with fp32 accumulation (PSEUDO_HALF/BF16 configs);
// f32 uses CUDNN_FMA_MATH, because CUDNN_DEFAULT_MATH lets cuDNN use TF32 on Ampere and
// later, whose 10-bit mantissa would break parity with the CPU reference; f64 is plain.
#include "kernels/cuda/conv.h"

#include "base/determinism.h"
#include "base/error.h"
#include "base/nvtx.h"

#if SONATA_WITH_CUDNN
#include <cudnn.h>

#include <array>
#include <limits>
#include <map>
#include <memory>
#include <mutex>

#include "base/cuda_check.h"
#include "base/cudnn_check.h"
#endif

namespace sonata::kernels::cuda {

#if SONATA_WITH_CUDNN
namespace {

constexpr size_t kWorkspaceCap = size_t(256) << 20;
constexpr int kMaxDevices = 64;

// One handle per device, created on first use and never destroyed (static destructors may
// run after the CUDA context is gone). Its mutex is held from cudnnSetStream to the last
// call of a pass, and while a pass's algorithm is chosen.
struct DeviceDnn {
  std::mutex mutex;
  cudnnHandle_t handle = nullptr;
};

DeviceDnn& device_dnn(int device) {
  static std::array<DeviceDnn, kMaxDevices> per_device;
  SONATA_CHECK(device >= 0 && device < kMaxDevices, "sonata::cuda::conv2d: device ", device,
               " is beyond the ", kMaxDevices, " devices the cuDNN handle cache holds");
  return per_device[size_t(device)];
}

struct DnnTypes {
  cudnnDataType_t data, compute;
  cudnnMathType_t math;
};

DnnTypes dnn_types(DType dtype) {
  switch (dtype) {
    case DType::f16:
      return {CUDNN_DATA_HALF, CUDNN_DATA_FLOAT, CUDNN_TENSOR_OP_MATH};
    case DType::bf16:
      return {CUDNN_DATA_BFLOAT16, CUDNN_DATA_FLOAT, CUDNN_TENSOR_OP_MATH};
    case DType::f32:
      return {CUDNN_DATA_FLOAT, CUDNN_DATA_FLOAT, CUDNN_FMA_MATH};
    case DType::f64:
      return {CUDNN_DATA_DOUBLE, CUDNN_DATA_DOUBLE, CUDNN_DEFAULT_MATH};
    default:
      break;
  }
  throw Error(str("sonata::cuda::conv2d: dtype ", dtype_name(dtype),
                  " is not supported (use f16, bf16, f32 or f64)"));
}

// f32 must not run on tensor cores (TF32): candidates that need them are skipped.
bool math_allowed(const DnnTypes& types, cudnnMathType_t candidate) {
  if (types.math != CUDNN_FMA_MATH) return true;
  return candidate != CUDNN_TENSOR_OP_MATH && candidate != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
}

struct Choice {
  bool chosen = false;
  int algo = 0;
  size_t workspace = 0;
};

// Descriptors and chosen algorithms of one (device, dtype, shape). Each pass has its own
// convolution descriptor because each carries the math type of its own algorithm.
struct ConvPlan {
  DnnTypes types{};
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  std::array<cudnnConvolutionDescriptor_t, 3> conv{};
  std::array<Choice, 3> choice{};
};

int as_int(int64_t value, const char* what) {
  SONATA_CHECK(value <= std::numeric_limits<int>::max(), "sonata::cuda::conv2d: ", what, " ", value,
               " exceeds cuDNN's 32-bit sizes (split the batch)");
  return int(value);
}

std::unique_ptr<ConvPlan> make_plan(DType dtype, const Conv2dShape& s) {
  auto plan = std::make_unique<ConvPlan>();
  plan->types = dnn_types(dtype);
  const cudnnDataType_t data = plan->types.data;
  // NHWC describes x, y and the filter alike (the filter as [c_out, kh, kw, c_in]); cuDNN
  // takes the logical NCHW sizes either way.
  const cudnnTensorFormat_t format = s.channels_last ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
  as_int(s.n * s.c_in * s.h * s.w, "input element count");
  as_int(s.n * s.c_out * s.h_out * s.w_out, "output element count");
  CUDNN_CHECK(cudnnCreateTensorDescriptor(&plan->x));
  CUDNN_CHECK(cudnnSetTensor4dDescriptor(plan->x, format, data, as_int(s.n, "batch"),
                                         as_int(s.c_in, "channels"), as_int(s.h, "height"),
                                         as_int(s.w, "width")));
  CUDNN_CHECK(cudnnCreateTensorDescriptor(&plan->y));
  CUDNN_CHECK(cudnnSetTensor4dDescriptor(plan->y, format, data, int(s.n), int(s.c_out),
                                         int(s.h_out), int(s.w_out)));
  CUDNN_CHECK(cudnnCreateFilterDescriptor(&plan->w));
  CUDNN_CHECK(cudnnSetFilter4dDescriptor(plan->w, data, format, int(s.c_out), int(s.c_in),
                                         int(s.kh), int(s.kw)));
  for (cudnnConvolutionDescriptor_t& conv : plan->conv) {
    CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&conv));
    CUDNN_CHECK(cudnnSetConvolution2dDescriptor(conv, int(s.pad_h), int(s.pad_w), int(s.stride_h),
                                                int(s.stride_w), int(s.dil_h), int(s.dil_w),
                                                CUDNN_CROSS_CORRELATION, plan->types.compute));
    CUDNN_CHECK(cudnnSetConvolutionMathType(conv, plan->types.math));
  }
  // The engine's output size and cuDNN's must agree, or every pass reads out of bounds.
  int n = 0, c = 0, h = 0, w = 0;
  CUDNN_CHECK(
      cudnnGetConvolution2dForwardOutputDim(plan->conv[0], plan->x, plan->w, &n, &c, &h, &w));
  SONATA_CHECK(n == s.n && c == s.c_out && h == s.h_out && w == s.w_out,
               "sonata::cuda::conv2d: cuDNN's output ", n, "x", c, "x", h, "x", w,
               " differs from the expected ", s.n, "x", s.c_out, "x", s.h_out, "x", s.w_out);
  return plan;
}

// Plans live for the process, like the handles; a training run sees a few dozen shapes.
ConvPlan& plan_for(int device, DType dtype, const Conv2dShape& s) {
  using Key = std::array<int64_t, 18>;
  static std::mutex mutex;
  static std::map<Key, std::unique_ptr<ConvPlan>> plans;
  const Key key{device,  int64_t(dtype), s.n,     s.c_in,     s.h,        s.w,
                s.c_out, s.kh,           s.kw,    s.stride_h, s.stride_w, s.pad_h,
                s.pad_w, s.dil_h,        s.dil_w, s.h_out,    s.w_out,    int64_t(s.channels_last)};
  const std::lock_guard<std::mutex> lock(mutex);
  std::unique_ptr<ConvPlan>& plan = plans[key];
  if (!plan) plan = make_plan(dtype, s);
  return *plan;
}

const char* pass_name(ConvPass pass) {
  switch (pass) {
    case ConvPass::forward:
      return "forward";
    case ConvPass::backward_input:
      return "backward (input)";
    case ConvPass::backward_weight:
      return "backward (weight)";
  }
  return "?";
}

// The first heuristic candidate that succeeds in an allowed math mode within the cap.
// `heuristics(perf, capacity, &returned)` fills cuDNN's ranked list; `workspace(algo,
// &bytes)` asks one algorithm's scratch (its status says whether it supports the shape).
template <typename Perf, size_t kCount, typename Heuristics, typename Workspace>
Choice choose(ConvPlan& plan, ConvPass pass, Heuristics heuristics, Workspace workspace) {
  cudnnConvolutionDescriptor_t conv = plan.conv[size_t(pass)];
  std::array<Perf, kCount> perf{};
  int returned = 0;
  CUDNN_CHECK(heuristics(perf.data(), int(kCount), &returned));
  for (int i = 0; i < returned; ++i) {
    const Perf& candidate = perf[size_t(i)];
    if (candidate.status != CUDNN_STATUS_SUCCESS || !math_allowed(plan.types, candidate.mathType))
      continue;
    if (deterministic_algorithms() && candidate.determinism != CUDNN_DETERMINISTIC) continue;
    const cudnnMathType_t math =
        plan.types.math == CUDNN_TENSOR_OP_MATH ? candidate.mathType : plan.types.math;
    CUDNN_CHECK(cudnnSetConvolutionMathType(conv, math));
    size_t bytes = 0;
    if (workspace(candidate.algo, &bytes) != CUDNN_STATUS_SUCCESS || bytes > kWorkspaceCap)
      continue;
    return {true, int(candidate.algo), bytes};
  }
  throw Error(str("sonata::cuda::conv2d: cuDNN offers no ",
                  deterministic_algorithms() ? "deterministic " : "", pass_name(pass),
                  " algorithm for this shape within the ", kWorkspaceCap >> 20,
                  " MiB workspace cap"));
}

// Chooses the pass's algorithm if not yet done. Called with the device's mutex held.
const Choice& ensure_choice(cudnnHandle_t handle, ConvPlan& p, ConvPass pass) {
  Choice& choice = p.choice[size_t(pass)];
  if (choice.chosen) return choice;
  cudnnConvolutionDescriptor_t conv = p.conv[size_t(pass)];
  switch (pass) {
    case ConvPass::forward:
      choice = choose<cudnnConvolutionFwdAlgoPerf_t, CUDNN_CONVOLUTION_FWD_ALGO_COUNT>(
          p, pass,
          [&](auto* perf, int capacity, int* returned) {
            return cudnnGetConvolutionForwardAlgorithm_v7(handle, p.x, p.w, conv, p.y, capacity,
                                                          returned, perf);
          },
          [&](auto algo, size_t* bytes) {
            return cudnnGetConvolutionForwardWorkspaceSize(handle, p.x, p.w, conv, p.y, algo,
                                                           bytes);
          });
      break;
    case ConvPass::backward_input:
      choice = choose<cudnnConvolutionBwdDataAlgoPerf_t, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT>(
          p, pass,
          [&](auto* perf, int capacity, int* returned) {
            return cudnnGetConvolutionBackwardDataAlgorithm_v7(handle, p.w, p.y, conv, p.x,
                                                               capacity, returned, perf);
          },
          [&](auto algo, size_t* bytes) {
            return cudnnGetConvolutionBackwardDataWorkspaceSize(handle, p.w, p.y, conv, p.x, algo,
                                                                bytes);
          });
      break;
    case ConvPass::backward_weight:
      choice = choose<cudnnConvolutionBwdFilterAlgoPerf_t, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT>(
          p, pass,
          [&](auto* perf, int capacity, int* returned) {
            return cudnnGetConvolutionBackwardFilterAlgorithm_v7(handle, p.x, p.y, conv, p.w,
                                                                 capacity, returned, perf);
          },
          [&](auto algo, size_t* bytes) {
            return cudnnGetConvolutionBackwardFilterWorkspaceSize(handle, p.x, p.y, conv, p.w, algo,
                                                                  bytes);
          });
      break;
  }
  return choice;
}

// Everything one pass needs, with the device's handle locked and bound to `stream`.
class PassContext {
 public:
  PassContext(DType dtype, const Conv2dShape& s, ConvPass pass, cudaStream_t stream) {
    int device = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    dnn_ = &device_dnn(device);
    plan_ = &plan_for(device, dtype, s);
    lock_ = std::unique_lock<std::mutex>(dnn_->mutex);
    if (!dnn_->handle) CUDNN_CHECK(cudnnCreate(&dnn_->handle));
    CUDNN_CHECK(cudnnSetStream(dnn_->handle, stream));
    choice_ = &ensure_choice(dnn_->handle, *plan_, pass);
    conv_ = plan_->conv[size_t(pass)];
  }
  cudnnHandle_t handle() const { return dnn_->handle; }
  const ConvPlan& plan() const { return *plan_; }
  const Choice& choice() const { return *choice_; }
  cudnnConvolutionDescriptor_t conv() const { return conv_; }
  void check_workspace(size_t bytes) const {
    SONATA_CHECK(bytes >= choice_->workspace, "sonata::cuda::conv2d: workspace of ", bytes,
                 " bytes is smaller than the ", choice_->workspace,
                 " the algorithm needs (size it with conv2d_workspace_bytes)");
  }
  // alpha = 1, beta = 0 in the compute type: double for f64, float otherwise.
  const void* one() const { return is_f64() ? static_cast<const void*>(&one_d_) : &one_f_; }
  const void* zero() const { return is_f64() ? static_cast<const void*>(&zero_d_) : &zero_f_; }

 private:
  bool is_f64() const { return plan_->types.data == CUDNN_DATA_DOUBLE; }
  DeviceDnn* dnn_ = nullptr;
  ConvPlan* plan_ = nullptr;
  const Choice* choice_ = nullptr;
  cudnnConvolutionDescriptor_t conv_ = nullptr;
  std::unique_lock<std::mutex> lock_;
  float one_f_ = 1.0f, zero_f_ = 0.0f;
  double one_d_ = 1.0, zero_d_ = 0.0;
};

// The bias kernels index y as [rows, c_out, plane]: NCHW is (n, c_out, h_out*w_out), NHWC is
// (n*h_out*w_out, c_out, 1).
int64_t bias_rows(const Conv2dShape& s) {
  return s.channels_last ? s.n * s.h_out * s.w_out : s.n;
}
int64_t bias_plane(const Conv2dShape& s) {
  return s.channels_last ? 1 : s.h_out * s.w_out;
}

}  // namespace

size_t conv2d_workspace_bytes(DType dtype, const Conv2dShape& shape, ConvPass pass,
                              cudaStream_t stream) {
  SONATA_NVTX_RANGE("sonata::cuda::conv2d_workspace_bytes");
  const PassContext context(dtype, shape, pass, stream);
  return context.choice().workspace;
}

void conv2d_forward(DType dtype, const Conv2dShape& s, const void* x, const void* weight,
                    const void* bias, void* y, void* workspace, size_t workspace_bytes,
                    cudaStream_t stream) {
  SONATA_NVTX_RANGE("sonata::cuda::conv2d_forward");
  {
    const PassContext c(dtype, s, ConvPass::forward, stream);
    c.check_workspace(workspace_bytes);
    CUDNN_CHECK(cudnnConvolutionForward(c.handle(), c.one(), c.plan().x, x, c.plan().w, weight,
                                        c.conv(), cudnnConvolutionFwdAlgo_t(c.choice().algo),
                                        workspace, workspace_bytes, c.zero(), c.plan().y, y));
  }
  if (bias) add_channel_bias(dtype, y, bias, bias_rows(s), s.c_out, bias_plane(s), stream);
}

void conv2d_backward_input(DType dtype, const Conv2dShape& s, const void* grad_y,
                           const void* weight, void* grad_x, void* workspace,
                           size_t workspace_bytes, cudaStream_t stream) {
  SONATA_NVTX_RANGE("sonata::cuda::conv2d_backward_input");
  const PassContext c(dtype, s, ConvPass::backward_input, stream);
  c.check_workspace(workspace_bytes);
  CUDNN_CHECK(
      cudnnConvolutionBackwardData(c.handle(), c.one(), c.plan().w, weight, c.plan().y, grad_y,
                                   c.conv(), cudnnConvolutionBwdDataAlgo_t(c.choice().algo),
                                   workspace, workspace_bytes, c.zero(), c.plan().x, grad_x));
}

void conv2d_backward_weight(DType dtype, const Conv2dShape& s, const void* grad_y, const void* x,
                            void* grad_weight, void* grad_bias, void* workspace,
                            size_t workspace_bytes, cudaStream_t stream) {
  SONATA_NVTX_RANGE("sonata::cuda::conv2d_backward_weight");
  {
    const PassContext c(dtype, s, ConvPass::backward_weight, stream);
    c.check_workspace(workspace_bytes);
    CUDNN_CHECK(cudnnConvolutionBackwardFilter(
        c.handle(), c.one(), c.plan().x, x, c.plan().y, grad_y, c.conv(),
        cudnnConvolutionBwdFilterAlgo_t(c.choice().algo), workspace, workspace_bytes, c.zero(),
        c.plan().w, grad_weight));
  }
  if (grad_bias)
    channel_bias_grad(dtype, grad_y, grad_bias, bias_rows(s), s.c_out, bias_plane(s), stream);
}

#else  // !SONATA_WITH_CUDNN

namespace {
[[noreturn]] void no_cudnn() {
  throw Error(
      "sonata::cuda::conv2d: cuDNN was not found at build time, so convolutions cannot run on "
      "CUDA (install cuDNN 9 or set CUDNN_ROOT, then reconfigure)");
}
}  // namespace

size_t conv2d_workspace_bytes(DType, const Conv2dShape&, ConvPass, cudaStream_t) {
  no_cudnn();
}
void conv2d_forward(DType, const Conv2dShape&, const void*, const void*, const void*, void*, void*,
                    size_t, cudaStream_t) {
  no_cudnn();
}
void conv2d_backward_input(DType, const Conv2dShape&, const void*, const void*, void*, void*,
                           size_t, cudaStream_t) {
  no_cudnn();
}
void conv2d_backward_weight(DType, const Conv2dShape&, const void*, const void*, void*, void*,
                            void*, size_t, cudaStream_t) {
  no_cudnn();
}

#endif

}  // namespace sonata::kernels::cuda

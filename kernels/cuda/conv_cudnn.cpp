// conv2d on CUDA through cuDNN's convolution API (host code; the bias kernels are in
// conv_bias.cu).
//
// Algorithms are chosen by measurement, as PyTorch's cudnn.benchmark: the first time a
// (device, dtype, shape, TF32 mode, determinism) is seen, cudnnFind*AlgorithmEx times every
// algorithm on scratch tensors of the pass's shapes (stream-ordered, from the same memory
// pool as the engine's tensors) and the fastest allowed one within the 256 MiB workspace
// cap is kept. Finding blocks the host once per shape, and a layer whose input length varies
// meets many shapes (DS2: a time length per batch; its batches pad time to a multiple of 8
// frames, which leaves about 30 per epoch on the demo but about 200 on LibriSpeech-like
// lengths). So each layer (the convolution without its batch and spatial
// sizes) measures at most kConvFindsPerLayer shapes per pass (kernels/common/
// conv_find_budget.h); its further shapes take cuDNN's heuristics
// (cudnnGetConvolution*Algorithm_v7), which run no kernels and never block the host.
// set_conv_algorithm_search(heuristic) uses the heuristics throughout, and they are also the
// fallback when the scratch cannot be allocated.
//
// Plans (descriptors and the chosen algorithms) live in a bounded LRU cache (64 by default,
// set_conv_plan_cache_capacity): DS2 sees a new time length per bucket, and an unbounded
// map would keep every one. cuDNN's legacy descriptors are host-side structures whose
// values are read when a call is enqueued (PyTorch creates and destroys them around every
// call), so an evicted plan is destroyed as soon as no thread holds it, with no
// synchronisation.
//
// Math: f16 and bf16 run on tensor cores with fp32 accumulation (PSEUDO_HALF/BF16 configs);
// f32 follows base/math_mode.h: TF32 allowed (CUDNN_DEFAULT_MATH, then the chosen
// algorithm's own math type) unless the mode is off, when CUDNN_FMA_MATH restricts cuDNN to
// FMA kernels and the result keeps fp32's rounding; f64 is plain.
#include "kernels/cuda/conv.h"

#include <atomic>

#include "base/determinism.h"
#include "base/error.h"
#include "base/math_mode.h"
#include "base/nvtx.h"

#if SONATA_WITH_CUDNN
#include <cudnn.h>

#include <algorithm>
#include <array>
#include <limits>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "base/cuda_check.h"
#include "base/cudnn_check.h"
#include "base/lru_cache.h"
#include "kernels/common/conv_find_budget.h"
#include "kernels/cuda/stream_scratch.h"
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
  cudnnMathType_t math;  // set on the descriptors before the algorithm is chosen
};

DnnTypes dnn_types(DType dtype) {
  switch (dtype) {
    case DType::f16:
      return {CUDNN_DATA_HALF, CUDNN_DATA_FLOAT, CUDNN_TENSOR_OP_MATH};
    case DType::bf16:
      return {CUDNN_DATA_BFLOAT16, CUDNN_DATA_FLOAT, CUDNN_TENSOR_OP_MATH};
    case DType::f32:
      // DEFAULT_MATH permits TF32 on Ampere and later; FMA_MATH forbids tensor cores.
      return {CUDNN_DATA_FLOAT, CUDNN_DATA_FLOAT,
              tf32_allowed_in_conv() ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH};
    case DType::f64:
      return {CUDNN_DATA_DOUBLE, CUDNN_DATA_DOUBLE, CUDNN_DEFAULT_MATH};
    default:
      break;
  }
  throw Error(str("sonata::cuda::conv2d: dtype ", dtype_name(dtype),
                  " is not supported (use f16, bf16, f32 or f64)"));
}

// Whether a candidate's math type may run: under FMA_MATH no tensor-core candidate; for
// f32 never ALLOW_CONVERSION, which would round the inputs to a half type (below TF32).
bool math_allowed(const DnnTypes& types, cudnnMathType_t candidate) {
  if (types.data == CUDNN_DATA_FLOAT && candidate == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION)
    return false;
  if (types.math != CUDNN_FMA_MATH) return true;
  return candidate != CUDNN_TENSOR_OP_MATH && candidate != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
}

// The math type the descriptor gets for a chosen candidate: the candidate's own (PyTorch's
// note: cuDNN runs the slower kernel otherwise), except where the plan's is a restriction.
cudnnMathType_t math_for(const DnnTypes& types, cudnnMathType_t candidate) {
  if (types.math == CUDNN_FMA_MATH || types.data == CUDNN_DATA_DOUBLE) return types.math;
  return candidate;
}

std::atomic<ConvAlgorithmSearch> algorithm_search{ConvAlgorithmSearch::measured};

// Never destroyed, like the plan cache: a measurement once spent stays spent.
ConvFindBudget& find_budget() {
  static ConvFindBudget* budget = new ConvFindBudget;
  return *budget;
}

struct Choice {
  bool chosen = false;
  int algo = 0;
  size_t workspace = 0;
};

// Descriptors and chosen algorithms of one (device, dtype, shape, TF32 mode, determinism).
// Each pass has its own convolution descriptor because each carries the math type of its
// own algorithm. Destroyed when evicted and no pass holds it any more.
struct ConvPlan {
  ConvPlan() = default;
  ConvPlan(const ConvPlan&) = delete;
  ConvPlan& operator=(const ConvPlan&) = delete;
  ~ConvPlan() {
    // Errors are ignored: a destructor must not throw, and nothing is left to undo.
    if (x) (void)cudnnDestroyTensorDescriptor(x);
    if (y) (void)cudnnDestroyTensorDescriptor(y);
    if (w) (void)cudnnDestroyFilterDescriptor(w);
    for (cudnnConvolutionDescriptor_t c : conv)
      if (c) (void)cudnnDestroyConvolutionDescriptor(c);
  }
  DType dtype = DType::f32;
  Conv2dShape shape{};
  DnnTypes types{};
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  std::array<cudnnConvolutionDescriptor_t, 3> conv{};
  std::array<Choice, 3> choice{};
  std::array<ConvLayerKey, 3> layer{};  // per pass, for the cudnnFind budget
};

int as_int(int64_t value, const char* what) {
  SONATA_CHECK(value <= std::numeric_limits<int>::max(), "sonata::cuda::conv2d: ", what, " ", value,
               " exceeds cuDNN's 32-bit sizes (split the batch)");
  return int(value);
}

std::shared_ptr<ConvPlan> make_plan(DType dtype, const Conv2dShape& s) {
  auto plan = std::make_shared<ConvPlan>();
  plan->dtype = dtype;
  plan->shape = s;
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

using PlanKey = std::array<int64_t, 20>;

struct PlanCache {
  std::mutex mutex;
  LruCache<PlanKey, std::shared_ptr<ConvPlan>> plans{kDefaultConvPlanCacheCapacity};
};

// Never destroyed: static destructors may run after the CUDA context is gone.
PlanCache& plan_cache() {
  static PlanCache* cache = new PlanCache;
  return *cache;
}

// The choice depends on the TF32 mode and on determinism too, so both are part of the key:
// changing either between steps finds new algorithms instead of reusing unfit ones.
std::shared_ptr<ConvPlan> plan_for(int device, DType dtype, const Conv2dShape& s) {
  const PlanKey key{device,
                    int64_t(dtype),
                    s.n,
                    s.c_in,
                    s.h,
                    s.w,
                    s.c_out,
                    s.kh,
                    s.kw,
                    s.stride_h,
                    s.stride_w,
                    s.pad_h,
                    s.pad_w,
                    s.dil_h,
                    s.dil_w,
                    s.h_out,
                    s.w_out,
                    int64_t(s.channels_last),
                    int64_t(tf32_allowed_in_conv()),
                    int64_t(deterministic_algorithms())};
  PlanCache& cache = plan_cache();
  // Declared before the lock, so evicted plans are destroyed after it is released.
  std::vector<std::pair<PlanKey, std::shared_ptr<ConvPlan>>> evicted;
  const std::lock_guard<std::mutex> lock(cache.mutex);
  if (std::shared_ptr<ConvPlan>* found = cache.plans.find(key)) return *found;
  std::shared_ptr<ConvPlan> plan = make_plan(dtype, s);
  for (int pass = 0; pass < 3; ++pass)
    plan->layer[size_t(pass)] = conv_layer_key(device, int64_t(dtype), pass, tf32_allowed_in_conv(),
                                               deterministic_algorithms(), s);
  evicted = cache.plans.insert(key, plan);
  return plan;
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

// The pass's x, w and y (as inputs or outputs, whichever the pass writes) and the search's
// workspace, for cudnnFind's timing runs: stream-ordered from the default pool, zeroed.
class FindScratch {
 public:
  FindScratch(const ConvPlan& plan, size_t workspace_bytes, cudaStream_t stream)
      : workspace_bytes_(workspace_bytes) {
    const Conv2dShape& s = plan.shape;
    const size_t element = dtype_size(plan.dtype);
    const size_t sizes[4] = {size_t(s.n * s.c_in * s.h * s.w) * element,
                             size_t(s.c_out * s.c_in * s.kh * s.kw) * element,
                             size_t(s.n * s.c_out * s.h_out * s.w_out) * element, workspace_bytes};
    // The buffers own their memory, so a throwing memset frees those already allocated.
    for (size_t i = 0; i < 4; ++i) {
      if (sizes[i] == 0) continue;
      // Out of memory is not an error here (the heuristics need no scratch).
      buffers_[i] = StreamScratch::try_allocate(sizes[i], stream);
      if (buffers_[i].empty()) {
        ok_ = false;
        return;
      }
      CUDA_CHECK(cudaMemsetAsync(buffers_[i].data(), 0, sizes[i], stream));
    }
  }
  bool ok() const { return ok_; }
  void* x() const { return buffers_[0].data(); }
  void* w() const { return buffers_[1].data(); }
  void* y() const { return buffers_[2].data(); }
  void* workspace() const { return buffers_[3].data(); }
  size_t workspace_bytes() const { return workspace_bytes_; }

 private:
  size_t workspace_bytes_;
  std::array<StreamScratch, 4> buffers_{};
  bool ok_ = true;
};

// The first of cuDNN's ranked candidates (by time for cudnnFind, by expectation for the
// heuristics) that succeeded in an allowed math mode, is deterministic when that is asked,
// and fits the cap. `workspace(algo, &bytes)` asks one algorithm's scratch with the
// descriptor's math type set as it will run. An unchosen Choice when none qualifies.
template <typename Perf, typename Workspace>
Choice first_allowed(ConvPlan& plan, ConvPass pass, const Perf* perf, int count,
                     Workspace workspace) {
  cudnnConvolutionDescriptor_t conv = plan.conv[size_t(pass)];
  for (int i = 0; i < count; ++i) {
    const Perf& candidate = perf[i];
    if (candidate.status != CUDNN_STATUS_SUCCESS || !math_allowed(plan.types, candidate.mathType))
      continue;
    if (deterministic_algorithms() && candidate.determinism != CUDNN_DETERMINISTIC) continue;
    CUDNN_CHECK(cudnnSetConvolutionMathType(conv, math_for(plan.types, candidate.mathType)));
    size_t bytes = 0;
    if (workspace(candidate.algo, &bytes) != CUDNN_STATUS_SUCCESS || bytes > kWorkspaceCap)
      continue;
    return {true, int(candidate.algo), bytes};
  }
  return {};
}

// The largest workspace any algorithm asks within the cap: what cudnnFind gets to try them.
template <typename Perf, size_t kCount, typename Workspace>
size_t search_workspace(Workspace workspace) {
  using Algo = decltype(Perf{}.algo);
  size_t largest = 0;
  for (int algo = 0; algo < int(kCount); ++algo) {
    size_t bytes = 0;
    if (workspace(Algo(algo), &bytes) == CUDNN_STATUS_SUCCESS && bytes <= kWorkspaceCap)
      largest = std::max(largest, bytes);
  }
  return largest;
}

// Measured (cudnnFind, `find(perf, capacity, &returned, scratch)`) unless the search is set
// to the heuristics or the scratch cannot be had; the heuristics
// (`heuristics(perf, capacity, &returned)`) also when no measured candidate qualifies.
template <typename Perf, size_t kCount, typename Heuristics, typename Find, typename Workspace>
Choice choose(ConvPlan& plan, ConvPass pass, cudaStream_t stream, Heuristics heuristics, Find find,
              Workspace workspace) {
  CUDNN_CHECK(cudnnSetConvolutionMathType(plan.conv[size_t(pass)], plan.types.math));
  std::array<Perf, kCount> perf{};
  int returned = 0;
  if (algorithm_search == ConvAlgorithmSearch::measured &&
      find_budget().take(plan.layer[size_t(pass)])) {
    const FindScratch scratch(plan, search_workspace<Perf, kCount>(workspace), stream);
    if (scratch.ok()) {
      CUDNN_CHECK(find(perf.data(), int(kCount), &returned, scratch));
      const Choice measured = first_allowed(plan, pass, perf.data(), returned, workspace);
      if (measured.chosen) return measured;
      CUDNN_CHECK(cudnnSetConvolutionMathType(plan.conv[size_t(pass)], plan.types.math));
    }
  }
  CUDNN_CHECK(heuristics(perf.data(), int(kCount), &returned));
  const Choice guessed = first_allowed(plan, pass, perf.data(), returned, workspace);
  if (guessed.chosen) return guessed;
  throw Error(str("sonata::cuda::conv2d: cuDNN offers no ",
                  deterministic_algorithms() ? "deterministic " : "", pass_name(pass),
                  " algorithm for this shape within the ", kWorkspaceCap >> 20,
                  " MiB workspace cap"));
}

// Chooses the pass's algorithm if not yet done. Called with the device's mutex held and the
// handle bound to `stream`.
const Choice& ensure_choice(cudnnHandle_t handle, ConvPlan& p, ConvPass pass, cudaStream_t stream) {
  Choice& choice = p.choice[size_t(pass)];
  if (choice.chosen) return choice;
  cudnnConvolutionDescriptor_t conv = p.conv[size_t(pass)];
  switch (pass) {
    case ConvPass::forward:
      choice = choose<cudnnConvolutionFwdAlgoPerf_t, CUDNN_CONVOLUTION_FWD_ALGO_COUNT>(
          p, pass, stream,
          [&](auto* perf, int capacity, int* returned) {
            return cudnnGetConvolutionForwardAlgorithm_v7(handle, p.x, p.w, conv, p.y, capacity,
                                                          returned, perf);
          },
          [&](auto* perf, int capacity, int* returned, const FindScratch& s) {
            return cudnnFindConvolutionForwardAlgorithmEx(handle, p.x, s.x(), p.w, s.w(), conv, p.y,
                                                          s.y(), capacity, returned, perf,
                                                          s.workspace(), s.workspace_bytes());
          },
          [&](auto algo, size_t* bytes) {
            return cudnnGetConvolutionForwardWorkspaceSize(handle, p.x, p.w, conv, p.y, algo,
                                                           bytes);
          });
      break;
    case ConvPass::backward_input:
      choice = choose<cudnnConvolutionBwdDataAlgoPerf_t, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT>(
          p, pass, stream,
          [&](auto* perf, int capacity, int* returned) {
            return cudnnGetConvolutionBackwardDataAlgorithm_v7(handle, p.w, p.y, conv, p.x,
                                                               capacity, returned, perf);
          },
          [&](auto* perf, int capacity, int* returned, const FindScratch& s) {
            return cudnnFindConvolutionBackwardDataAlgorithmEx(handle, p.w, s.w(), p.y, s.y(), conv,
                                                               p.x, s.x(), capacity, returned, perf,
                                                               s.workspace(), s.workspace_bytes());
          },
          [&](auto algo, size_t* bytes) {
            return cudnnGetConvolutionBackwardDataWorkspaceSize(handle, p.w, p.y, conv, p.x, algo,
                                                                bytes);
          });
      break;
    case ConvPass::backward_weight:
      choice = choose<cudnnConvolutionBwdFilterAlgoPerf_t, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT>(
          p, pass, stream,
          [&](auto* perf, int capacity, int* returned) {
            return cudnnGetConvolutionBackwardFilterAlgorithm_v7(handle, p.x, p.y, conv, p.w,
                                                                 capacity, returned, perf);
          },
          [&](auto* perf, int capacity, int* returned, const FindScratch& s) {
            return cudnnFindConvolutionBackwardFilterAlgorithmEx(
                handle, p.x, s.x(), p.y, s.y(), conv, p.w, s.w(), capacity, returned, perf,
                s.workspace(), s.workspace_bytes());
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
    // Held for the whole pass: the cache may evict the plan meanwhile, and then the last
    // holder destroys it.
    plan_ = plan_for(device, dtype, s);
    lock_ = std::unique_lock<std::mutex>(dnn_->mutex);
    if (!dnn_->handle) CUDNN_CHECK(cudnnCreate(&dnn_->handle));
    CUDNN_CHECK(cudnnSetStream(dnn_->handle, stream));
    choice_ = &ensure_choice(dnn_->handle, *plan_, pass, stream);
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
  std::shared_ptr<ConvPlan> plan_;
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

void set_conv_algorithm_search(ConvAlgorithmSearch search) {
  algorithm_search = search;
}

void set_conv_plan_cache_capacity(size_t capacity) {
  PlanCache& cache = plan_cache();
  std::vector<std::pair<PlanKey, std::shared_ptr<ConvPlan>>> evicted;
  const std::lock_guard<std::mutex> lock(cache.mutex);
  SONATA_CHECK(capacity >= 1, "set_conv_plan_cache_capacity: capacity must be at least 1, got ",
               capacity);
  evicted = cache.plans.set_capacity(capacity);
}

size_t conv_plan_cache_size() {
  PlanCache& cache = plan_cache();
  const std::lock_guard<std::mutex> lock(cache.mutex);
  return cache.plans.size();
}

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
void set_conv_algorithm_search(ConvAlgorithmSearch) {}
void set_conv_plan_cache_capacity(size_t capacity) {
  SONATA_CHECK(capacity >= 1, "set_conv_plan_cache_capacity: capacity must be at least 1, got ",
               capacity);
}
size_t conv_plan_cache_size() {
  return 0;
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

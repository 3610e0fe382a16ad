// The emulated cuDNN's algorithms: which exist for a convolution, the workspace each asks
// for (made up, but of the real ones' kind: none for implicit GEMM, an im2col buffer for
// GEMM, padded transforms for FFT), the heuristics' order (cudnnGet*_v7), and the
// host-blocking measured search (cudnnFind*Ex), counted for the tests.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <numeric>
#include <vector>

#include "emu/libs/cudnn_internal.h"

namespace sonata::emu::dnn {

int algo_count(Pass pass) {
  switch (pass) {
    case Pass::forward:
      return CUDNN_CONVOLUTION_FWD_ALGO_COUNT;
    case Pass::backward_data:
      return CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT;
    case Pass::backward_filter:
      return CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT;
  }
  return 0;
}

const char* pass_call(Pass pass) {
  switch (pass) {
    case Pass::forward:
      return "cudnnConvolutionForward";
    case Pass::backward_data:
      return "cudnnConvolutionBackwardData";
    case Pass::backward_filter:
      return "cudnnConvolutionBackwardFilter";
  }
  return "?";
}

AlgoInfo algo_info(Pass pass, int algo, const ConvGeometry& g) {
  const cudnnConvolutionStruct& cv = *g.conv;
  const size_t elem = size_t(elem_size(g.x.elem));
  const size_t r = size_t(g.w.h), s = size_t(g.w.w), c = size_t(g.w.c), k = size_t(g.w.n);
  const size_t n = size_t(g.x.n);
  const size_t out_pixels = size_t(g.y.h * g.y.w);
  const size_t in_pixels_padded = size_t((g.x.h + 2 * cv.pad_h) * (g.x.w + 2 * cv.pad_w));
  const bool unit = cv.u == 1 && cv.v == 1 && cv.dil_h == 1 && cv.dil_w == 1;
  const bool three = r == 3 && s == 3 && unit;
  const bool not_f64 = !g.f64;
  auto round = [](size_t bytes) { return (bytes + 255) / 256 * 256; };
  const size_t im2col = round(c * r * s * out_pixels * elem);
  const size_t fft = round(n * (c + k) * in_pixels_padded * 8 + c * k * in_pixels_padded * 8);
  const size_t tiles = round((c + k) * n * 32 * 32 * 8);
  const size_t winograd =
      round(c * k * 36 * elem + n * (c + k) * ((out_pixels + 3) / 4) * 36 * elem);
  const size_t precomp = round(r * s * sizeof(int) * 2 + 256);
  AlgoInfo info;
  switch (pass) {
    case Pass::forward:
      switch (algo) {
        case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM:
          return {true, 0, true, true};
        case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM:
          return {true, precomp, true, true};
        case CUDNN_CONVOLUTION_FWD_ALGO_GEMM:
          return {true, im2col, true, false};
        case CUDNN_CONVOLUTION_FWD_ALGO_FFT:
          return {unit && not_f64, fft, true, false};
        case CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING:
          return {unit && not_f64, tiles, true, false};
        case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD:
          return {three && not_f64, 0, true, false};
        case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED:
          return {three && not_f64, winograd, true, true};
        default:
          return info;  // DIRECT: not implemented by cuDNN either
      }
    case Pass::backward_data:
      switch (algo) {
        case CUDNN_CONVOLUTION_BWD_DATA_ALGO_0:
          return {true, 0, false, false};
        case CUDNN_CONVOLUTION_BWD_DATA_ALGO_1:
          return {true, precomp, true, true};
        case CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT:
          return {unit && not_f64, fft, true, false};
        case CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING:
          return {unit && not_f64, tiles, true, false};
        case CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD:
          return {three && not_f64, 0, true, false};
        case CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED:
          return {three && not_f64, winograd, true, true};
        default:
          return info;
      }
    case Pass::backward_filter:
      switch (algo) {
        case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0:
          return {true, 0, false, false};
        case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1:
          return {true, precomp, true, true};
        case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT:
          return {unit && not_f64, fft, true, false};
        case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3:
          return {true, im2col, false, false};
        case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED:
          return {three && not_f64, winograd, true, true};
        case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING:
          return {unit && not_f64, tiles, true, false};
        default:
          return info;  // WINOGRAD: not implemented by cuDNN either
      }
  }
  return info;
}

namespace {

// The math type a result entry reports: tensor-core algorithms run in TENSOR_OP_MATH where
// the descriptor allows it (fp16/bf16 always; fp32 unless FMA_MATH, as TF32), else the
// descriptor's own.
cudnnMathType_t entry_math(const ConvGeometry& g, const AlgoInfo& info) {
  const cudnnMathType_t math = g.conv->math;
  if (g.f64) return CUDNN_DEFAULT_MATH;
  if (info.tensor_cores && math != CUDNN_FMA_MATH) return CUDNN_TENSOR_OP_MATH;
  return math == CUDNN_FMA_MATH ? CUDNN_FMA_MATH : CUDNN_DEFAULT_MATH;
}

// The heuristics' fixed preference, per pass (cheap implicit GEMM first).
std::vector<int> heuristic_order(Pass pass) {
  switch (pass) {
    case Pass::forward:
      return {1, 0, 7, 6, 2, 5, 4, 3};
    case Pass::backward_data:
      return {1, 0, 5, 4, 3, 2};
    case Pass::backward_filter:
      return {1, 0, 3, 5, 6, 2, 4};
  }
  return {};
}

template <typename Perf, typename Algo>
void fill(Pass pass, const ConvGeometry& g, const std::vector<int>& order, bool measured,
          size_t workspace_limit, int requested, int* returned, Perf* perf) {
  int count = 0;
  for (int algo : order) {
    if (count >= requested) break;
    const AlgoInfo info = algo_info(pass, algo, g);
    Perf entry{};
    entry.algo = Algo(algo);
    entry.memory = info.workspace;
    entry.determinism = info.deterministic ? CUDNN_DETERMINISTIC : CUDNN_NON_DETERMINISTIC;
    entry.mathType = entry_math(g, info);
    if (!info.supported)
      entry.status = CUDNN_STATUS_NOT_SUPPORTED;
    else if (measured && info.workspace > workspace_limit)
      entry.status = CUDNN_STATUS_NOT_SUPPORTED;  // could not run within the given workspace
    else
      entry.status = CUDNN_STATUS_SUCCESS;
    entry.time = entry.status == CUDNN_STATUS_SUCCESS ? float(count + 1) * 0.125f : -1.0f;
    perf[count++] = entry;
  }
  *returned = count;
}

// Measured order: runnable algorithms first, those with more workspace "faster" (as FFT
// and GEMM often are), ties by index; then the rest.
std::vector<int> measured_order(Pass pass, const ConvGeometry& g, size_t workspace_limit) {
  std::vector<int> order(size_t(algo_count(pass)));
  std::iota(order.begin(), order.end(), 0);
  auto rank = [&](int algo) {
    const AlgoInfo info = algo_info(pass, algo, g);
    return info.supported && info.workspace <= workspace_limit;
  };
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    const bool ra = rank(a), rb = rank(b);
    if (ra != rb) return ra;
    return algo_info(pass, a, g).workspace > algo_info(pass, b, g).workspace;
  });
  return order;
}

}  // namespace

// The search: checks, then one piece of work that runs the pass on the given buffers (as
// the timing runs do: they write the output and the workspace), then blocks the host until
// the handle's stream has run it, as cudnnFind does.
template <typename Perf, typename Algo>
cudnnStatus_t find(Pass pass, cudnnHandle_t handle, const ConvGeometry& geometry_in, const void* x,
                   const void* w, const void* y, void* workspace, size_t workspace_bytes,
                   int requested, int* returned, Perf* perf, const char* call) {
  if (const cudnnStatus_t s = check_stream(handle, call); s != CUDNN_STATUS_SUCCESS) return s;
  if (!returned || !perf || requested < 1)
    return fail(CUDNN_STATUS_BAD_PARAM, std::string(call) + ": no room for results");
  if (!x || !w || !y || (workspace_bytes > 0 && !workspace))
    return fail(CUDNN_STATUS_BAD_PARAM, std::string(call) + ": null data pointer");
  ++library_counters().cudnn_find;
  ConvGeometry g = geometry_in;
  g.x.data = const_cast<void*>(x);
  g.w.data = const_cast<void*>(w);
  g.y.data = const_cast<void*>(y);
  Work work;
  work.name = call;
  work.kind = sonata::emu::WorkKind::library;
  work.cost = conv_cost(g, true);
  const View& out = pass == Pass::forward ? g.y : pass == Pass::backward_data ? g.x : g.w;
  for (const View* v : {&g.x, &g.w, &g.y})
    if (v != &out) add_range(work.reads, v->range());
  work.writes.push_back(out.range());
  if (workspace_bytes > 0) work.writes.push_back({workspace, workspace_bytes});
  work.run = [pass, g] { convolve(pass, g, 1.0, 0.0); };
  if (enqueue(handle->stream, std::move(work)) != cudaSuccess)
    return fail(CUDNN_STATUS_EXECUTION_FAILED, std::string(call) + ": could not enqueue");
  if (cudaStreamSynchronize(handle->stream) != cudaSuccess)
    return fail(CUDNN_STATUS_EXECUTION_FAILED,
                std::string(call) + ": the stream failed while the algorithms were timed");
  fill<Perf, Algo>(pass, g, measured_order(pass, g, workspace_bytes), true, workspace_bytes,
                   requested, returned, perf);
  return CUDNN_STATUS_SUCCESS;
}

template <typename Perf, typename Algo>
cudnnStatus_t heuristics(Pass pass, cudnnHandle_t handle, const ConvGeometry& g, int requested,
                         int* returned, Perf* perf, const char* call) {
  if (!handle) return fail(CUDNN_STATUS_BAD_PARAM, std::string(call) + ": null handle");
  if (!returned || !perf || requested < 1)
    return fail(CUDNN_STATUS_BAD_PARAM, std::string(call) + ": no room for results");
  fill<Perf, Algo>(pass, g, heuristic_order(pass), false, 0, requested, returned, perf);
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t workspace_size(Pass pass, cudnnHandle_t handle, const ConvGeometry& g, int algo,
                             size_t* bytes, const char* call) {
  if (!handle || !bytes) return fail(CUDNN_STATUS_BAD_PARAM, std::string(call) + ": null argument");
  if (algo < 0 || algo >= algo_count(pass))
    return fail(CUDNN_STATUS_BAD_PARAM,
                std::string(call) + ": invalid algorithm " + std::to_string(algo));
  const AlgoInfo info = algo_info(pass, algo, g);
  if (!info.supported) return CUDNN_STATUS_NOT_SUPPORTED;  // a normal answer while searching
  *bytes = info.workspace;
  return CUDNN_STATUS_SUCCESS;
}

}  // namespace sonata::emu::dnn

using namespace sonata::emu::dnn;

#define SONATA_EMU_GEOMETRY(x, w, conv, y, call)                                            \
  ConvGeometry g;                                                                           \
  if (const cudnnStatus_t s = geometry(x, w, conv, y, call, &g); s != CUDNN_STATUS_SUCCESS) \
    return s;

cudnnStatus_t cudnnGetConvolutionForwardAlgorithmMaxCount(cudnnHandle_t, int* count) {
  *count = CUDNN_CONVOLUTION_FWD_ALGO_COUNT;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnGetConvolutionBackwardDataAlgorithmMaxCount(cudnnHandle_t, int* count) {
  *count = CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(cudnnHandle_t, int* count) {
  *count = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolutionForwardAlgorithm_v7(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t x, const cudnnFilterDescriptor_t w,
    const cudnnConvolutionDescriptor_t conv, const cudnnTensorDescriptor_t y, const int requested,
    int* returned, cudnnConvolutionFwdAlgoPerf_t* perf) {
  const char* call = "cudnnGetConvolutionForwardAlgorithm_v7";
  SONATA_EMU_GEOMETRY(x, w, conv, y, call)
  return heuristics<cudnnConvolutionFwdAlgoPerf_t, cudnnConvolutionFwdAlgo_t>(
      Pass::forward, handle, g, requested, returned, perf, call);
}

cudnnStatus_t cudnnGetConvolutionBackwardDataAlgorithm_v7(
    cudnnHandle_t handle, const cudnnFilterDescriptor_t w, const cudnnTensorDescriptor_t dy,
    const cudnnConvolutionDescriptor_t conv, const cudnnTensorDescriptor_t dx, const int requested,
    int* returned, cudnnConvolutionBwdDataAlgoPerf_t* perf) {
  const char* call = "cudnnGetConvolutionBackwardDataAlgorithm_v7";
  SONATA_EMU_GEOMETRY(dx, w, conv, dy, call)
  return heuristics<cudnnConvolutionBwdDataAlgoPerf_t, cudnnConvolutionBwdDataAlgo_t>(
      Pass::backward_data, handle, g, requested, returned, perf, call);
}

cudnnStatus_t cudnnGetConvolutionBackwardFilterAlgorithm_v7(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t x, const cudnnTensorDescriptor_t dy,
    const cudnnConvolutionDescriptor_t conv, const cudnnFilterDescriptor_t dw, const int requested,
    int* returned, cudnnConvolutionBwdFilterAlgoPerf_t* perf) {
  const char* call = "cudnnGetConvolutionBackwardFilterAlgorithm_v7";
  SONATA_EMU_GEOMETRY(x, dw, conv, dy, call)
  return heuristics<cudnnConvolutionBwdFilterAlgoPerf_t, cudnnConvolutionBwdFilterAlgo_t>(
      Pass::backward_filter, handle, g, requested, returned, perf, call);
}

cudnnStatus_t cudnnFindConvolutionForwardAlgorithmEx(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t xd, const void* x,
    const cudnnFilterDescriptor_t wd, const void* w, const cudnnConvolutionDescriptor_t conv,
    const cudnnTensorDescriptor_t yd, void* y, const int requested, int* returned,
    cudnnConvolutionFwdAlgoPerf_t* perf, void* workspace, size_t workspace_bytes) {
  const char* call = "cudnnFindConvolutionForwardAlgorithmEx";
  SONATA_EMU_GEOMETRY(xd, wd, conv, yd, call)
  return find<cudnnConvolutionFwdAlgoPerf_t, cudnnConvolutionFwdAlgo_t>(
      Pass::forward, handle, g, x, w, y, workspace, workspace_bytes, requested, returned, perf,
      call);
}

cudnnStatus_t cudnnFindConvolutionBackwardDataAlgorithmEx(
    cudnnHandle_t handle, const cudnnFilterDescriptor_t wd, const void* w,
    const cudnnTensorDescriptor_t dyd, const void* dy, const cudnnConvolutionDescriptor_t conv,
    const cudnnTensorDescriptor_t dxd, void* dx, const int requested, int* returned,
    cudnnConvolutionBwdDataAlgoPerf_t* perf, void* workspace, size_t workspace_bytes) {
  const char* call = "cudnnFindConvolutionBackwardDataAlgorithmEx";
  SONATA_EMU_GEOMETRY(dxd, wd, conv, dyd, call)
  return find<cudnnConvolutionBwdDataAlgoPerf_t, cudnnConvolutionBwdDataAlgo_t>(
      Pass::backward_data, handle, g, dx, w, dy, workspace, workspace_bytes, requested, returned,
      perf, call);
}

cudnnStatus_t cudnnFindConvolutionBackwardFilterAlgorithmEx(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t xd, const void* x,
    const cudnnTensorDescriptor_t dyd, const void* dy, const cudnnConvolutionDescriptor_t conv,
    const cudnnFilterDescriptor_t dwd, void* dw, const int requested, int* returned,
    cudnnConvolutionBwdFilterAlgoPerf_t* perf, void* workspace, size_t workspace_bytes) {
  const char* call = "cudnnFindConvolutionBackwardFilterAlgorithmEx";
  SONATA_EMU_GEOMETRY(xd, dwd, conv, dyd, call)
  return find<cudnnConvolutionBwdFilterAlgoPerf_t, cudnnConvolutionBwdFilterAlgo_t>(
      Pass::backward_filter, handle, g, x, dw, dy, workspace, workspace_bytes, requested, returned,
      perf, call);
}

cudnnStatus_t cudnnGetConvolutionForwardWorkspaceSize(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t x, const cudnnFilterDescriptor_t w,
    const cudnnConvolutionDescriptor_t conv, const cudnnTensorDescriptor_t y,
    cudnnConvolutionFwdAlgo_t algo, size_t* bytes) {
  const char* call = "cudnnGetConvolutionForwardWorkspaceSize";
  SONATA_EMU_GEOMETRY(x, w, conv, y, call)
  return workspace_size(Pass::forward, handle, g, algo, bytes, call);
}

cudnnStatus_t cudnnGetConvolutionBackwardDataWorkspaceSize(
    cudnnHandle_t handle, const cudnnFilterDescriptor_t w, const cudnnTensorDescriptor_t dy,
    const cudnnConvolutionDescriptor_t conv, const cudnnTensorDescriptor_t dx,
    cudnnConvolutionBwdDataAlgo_t algo, size_t* bytes) {
  const char* call = "cudnnGetConvolutionBackwardDataWorkspaceSize";
  SONATA_EMU_GEOMETRY(dx, w, conv, dy, call)
  return workspace_size(Pass::backward_data, handle, g, algo, bytes, call);
}

cudnnStatus_t cudnnGetConvolutionBackwardFilterWorkspaceSize(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t x, const cudnnTensorDescriptor_t dy,
    const cudnnConvolutionDescriptor_t conv, const cudnnFilterDescriptor_t dw,
    cudnnConvolutionBwdFilterAlgo_t algo, size_t* bytes) {
  const char* call = "cudnnGetConvolutionBackwardFilterWorkspaceSize";
  SONATA_EMU_GEOMETRY(x, dw, conv, dy, call)
  return workspace_size(Pass::backward_filter, handle, g, algo, bytes, call);
}

// The emulated cuDNN's executions: each pass, the bias gradient and AddTensor are one piece
// of work on the handle's stream with the exact ranges of their operands and of the
// workspace the chosen algorithm needs; a workspace smaller than that fails as cuDNN does.
#include <algorithm>
#include <vector>

#include "emu/libs/cudnn_internal.h"

namespace sonata::emu::dnn {
namespace {

double scalar(const void* p, bool f64) {
  return f64 ? *static_cast<const double*>(p) : double(*static_cast<const float*>(p));
}

cudnnStatus_t run_pass(Pass pass, cudnnHandle_t handle, ConvGeometry g, int algo,
                       const void* alpha_p, const void* beta_p, void* workspace,
                       size_t workspace_bytes) {
  const char* call = pass_call(pass);
  if (const cudnnStatus_t s = check_stream(handle, call); s != CUDNN_STATUS_SUCCESS) return s;
  if (!alpha_p || !beta_p || !g.x.data || !g.w.data || !g.y.data)
    return fail(CUDNN_STATUS_BAD_PARAM, std::string(call) + ": null data, alpha or beta");
  if (algo < 0 || algo >= algo_count(pass))
    return fail(CUDNN_STATUS_BAD_PARAM,
                std::string(call) + ": invalid algorithm " + std::to_string(algo));
  const AlgoInfo info = algo_info(pass, algo, g);
  if (!info.supported)
    return fail(CUDNN_STATUS_NOT_SUPPORTED, std::string(call) + ": algorithm " +
                                                std::to_string(algo) +
                                                " does not support this convolution");
  if (workspace_bytes < info.workspace)
    return fail(CUDNN_STATUS_BAD_PARAM, std::string(call) + ": workSpaceSizeInBytes " +
                                            std::to_string(workspace_bytes) + " is less than the " +
                                            std::to_string(info.workspace) + " algorithm " +
                                            std::to_string(algo) + " requires");
  if (info.workspace > 0 && !workspace)
    return fail(CUDNN_STATUS_BAD_PARAM, std::string(call) + ": null workspace");
  const double alpha = scalar(alpha_p, g.f64), beta = scalar(beta_p, g.f64);
  Work work;
  work.name = call;
  work.kind = sonata::emu::WorkKind::library;
  work.cost = conv_cost(g, info.tensor_cores);
  const View& out = pass == Pass::forward ? g.y : pass == Pass::backward_data ? g.x : g.w;
  for (const View* v : {&g.x, &g.w, &g.y})
    if (v != &out) add_range(work.reads, v->range());
  if (beta != 0.0) work.reads.push_back(out.range());
  work.writes.push_back(out.range());
  if (info.workspace > 0) work.writes.push_back({workspace, info.workspace});
  work.run = [pass, g, alpha, beta] { convolve(pass, g, alpha, beta); };
  if (enqueue(handle->stream, std::move(work)) != cudaSuccess)
    return fail(CUDNN_STATUS_EXECUTION_FAILED, std::string(call) + ": could not enqueue");
  return CUDNN_STATUS_SUCCESS;
}

}  // namespace
}  // namespace sonata::emu::dnn

using namespace sonata::emu::dnn;
using sonata::emu::Elem;

cudnnStatus_t cudnnConvolutionForward(cudnnHandle_t handle, const void* alpha,
                                      const cudnnTensorDescriptor_t xd, const void* x,
                                      const cudnnFilterDescriptor_t wd, const void* w,
                                      const cudnnConvolutionDescriptor_t conv,
                                      cudnnConvolutionFwdAlgo_t algo, void* workspace,
                                      size_t workspace_bytes, const void* beta,
                                      const cudnnTensorDescriptor_t yd, void* y) {
  ConvGeometry g;
  if (const cudnnStatus_t s = geometry(xd, wd, conv, yd, "cudnnConvolutionForward", &g);
      s != CUDNN_STATUS_SUCCESS)
    return s;
  g.x.data = const_cast<void*>(x), g.w.data = const_cast<void*>(w), g.y.data = y;
  return run_pass(Pass::forward, handle, g, algo, alpha, beta, workspace, workspace_bytes);
}

cudnnStatus_t cudnnConvolutionBackwardData(cudnnHandle_t handle, const void* alpha,
                                           const cudnnFilterDescriptor_t wd, const void* w,
                                           const cudnnTensorDescriptor_t dyd, const void* dy,
                                           const cudnnConvolutionDescriptor_t conv,
                                           cudnnConvolutionBwdDataAlgo_t algo, void* workspace,
                                           size_t workspace_bytes, const void* beta,
                                           const cudnnTensorDescriptor_t dxd, void* dx) {
  ConvGeometry g;
  if (const cudnnStatus_t s = geometry(dxd, wd, conv, dyd, "cudnnConvolutionBackwardData", &g);
      s != CUDNN_STATUS_SUCCESS)
    return s;
  g.x.data = dx, g.w.data = const_cast<void*>(w), g.y.data = const_cast<void*>(dy);
  return run_pass(Pass::backward_data, handle, g, algo, alpha, beta, workspace, workspace_bytes);
}

cudnnStatus_t cudnnConvolutionBackwardFilter(cudnnHandle_t handle, const void* alpha,
                                             const cudnnTensorDescriptor_t xd, const void* x,
                                             const cudnnTensorDescriptor_t dyd, const void* dy,
                                             const cudnnConvolutionDescriptor_t conv,
                                             cudnnConvolutionBwdFilterAlgo_t algo, void* workspace,
                                             size_t workspace_bytes, const void* beta,
                                             const cudnnFilterDescriptor_t dwd, void* dw) {
  ConvGeometry g;
  if (const cudnnStatus_t s = geometry(xd, dwd, conv, dyd, "cudnnConvolutionBackwardFilter", &g);
      s != CUDNN_STATUS_SUCCESS)
    return s;
  g.x.data = const_cast<void*>(x), g.w.data = dw, g.y.data = const_cast<void*>(dy);
  return run_pass(Pass::backward_filter, handle, g, algo, alpha, beta, workspace, workspace_bytes);
}

namespace {

// C = alpha * reduce_or_broadcast(A) + beta * C, where each dimension of the smaller of the
// two is 1 or equal to the other's: AddTensor broadcasts A into C, BackwardBias sums dy into
// db (the dimensions where db is 1 are summed over).
cudnnStatus_t broadcast_op(cudnnHandle_t handle, const char* call, const void* alpha_p,
                           const cudnnTensorStruct* ad, const void* a, const void* beta_p,
                           const cudnnTensorStruct* cd, void* c, bool reduce) {
  if (const cudnnStatus_t s = check_stream(handle, call); s != CUDNN_STATUS_SUCCESS) return s;
  if (!ad || !cd || !ad->set || !cd->set || !a || !c || !alpha_p || !beta_p)
    return fail(CUDNN_STATUS_BAD_PARAM, std::string(call) + ": null or unset argument");
  if (ad->type != cd->type)
    return fail(CUDNN_STATUS_BAD_PARAM, std::string(call) + ": the tensors' data types differ");
  const cudnnTensorStruct& small = reduce ? *cd : *ad;
  const cudnnTensorStruct& big = reduce ? *ad : *cd;
  const int sd[4] = {small.n, small.c, small.h, small.w}, bd[4] = {big.n, big.c, big.h, big.w};
  for (int i = 0; i < 4; ++i)
    if (sd[i] != 1 && sd[i] != bd[i])
      return fail(CUDNN_STATUS_BAD_PARAM, std::string(call) + ": dimension " + std::to_string(i) +
                                              " is " + std::to_string(sd[i]) +
                                              " in one tensor and " + std::to_string(bd[i]) +
                                              " in the other (must be equal or 1)");
  const View av = tensor_view(*ad, a), cv = tensor_view(*cd, c);
  const bool f64 = ad->type == CUDNN_DATA_DOUBLE;
  const double alpha = scalar(alpha_p, f64), beta = scalar(beta_p, f64);
  sonata::emu::Work work;
  work.name = call;
  work.kind = sonata::emu::WorkKind::library;
  work.cost = {.bytes = double(elem_size(av.elem)) *
                        double(av.n * av.c * av.h * av.w + cv.n * cv.c * cv.h * cv.w),
               .math = "memory",
               .library = "cudnn"};
  work.reads.push_back(av.range());
  if (beta != 0.0) work.reads.push_back(cv.range());
  work.writes.push_back(cv.range());
  work.run = [av, cv, alpha, beta, reduce, f64] {
    const View& big = reduce ? av : cv;
    const View& small = reduce ? cv : av;
    std::vector<double> sums;
    if (reduce) sums.assign(size_t(small.n * small.c * small.h * small.w), 0.0);
    auto small_index = [&](int64_t n, int64_t c, int64_t h, int64_t w) {
      const int64_t sn = small.n == 1 ? 0 : n, sc = small.c == 1 ? 0 : c;
      const int64_t sh = small.h == 1 ? 0 : h, sw = small.w == 1 ? 0 : w;
      return ((sn * small.c + sc) * small.h + sh) * small.w + sw;
    };
    auto small_offset = [&](int64_t n, int64_t c, int64_t h, int64_t w) {
      return small.offset(small.n == 1 ? 0 : n, small.c == 1 ? 0 : c, small.h == 1 ? 0 : h,
                          small.w == 1 ? 0 : w);
    };
    for (int64_t n = 0; n < big.n; ++n)
      for (int64_t c = 0; c < big.c; ++c)
        for (int64_t h = 0; h < big.h; ++h)
          for (int64_t w = 0; w < big.w; ++w) {
            if (reduce) {
              sums[size_t(small_index(n, c, h, w))] +=
                  sonata::emu::load_elem(big.elem, big.data, big.offset(n, c, h, w));
            } else {
              const int64_t at = big.offset(n, c, h, w);
              double value =
                  alpha * sonata::emu::load_elem(small.elem, small.data, small_offset(n, c, h, w));
              if (beta != 0.0) value += beta * sonata::emu::load_elem(big.elem, big.data, at);
              sonata::emu::store_elem(big.elem, big.data, at, value);
            }
          }
    if (!reduce) return;
    for (int64_t n = 0; n < small.n; ++n)
      for (int64_t c = 0; c < small.c; ++c)
        for (int64_t h = 0; h < small.h; ++h)
          for (int64_t w = 0; w < small.w; ++w) {
            const int64_t at = small.offset(n, c, h, w);
            double value = sums[size_t(((n * small.c + c) * small.h + h) * small.w + w)];
            if (!f64) value = double(float(value));
            value *= alpha;
            if (beta != 0.0) value += beta * sonata::emu::load_elem(small.elem, small.data, at);
            sonata::emu::store_elem(small.elem, small.data, at, value);
          }
  };
  if (sonata::emu::enqueue(handle->stream, std::move(work)) != cudaSuccess)
    return fail(CUDNN_STATUS_EXECUTION_FAILED, std::string(call) + ": could not enqueue");
  return CUDNN_STATUS_SUCCESS;
}

}  // namespace

cudnnStatus_t cudnnConvolutionBackwardBias(cudnnHandle_t handle, const void* alpha,
                                           const cudnnTensorDescriptor_t dyd, const void* dy,
                                           const void* beta, const cudnnTensorDescriptor_t dbd,
                                           void* db) {
  return broadcast_op(handle, "cudnnConvolutionBackwardBias", alpha, dyd, dy, beta, dbd, db, true);
}

cudnnStatus_t cudnnAddTensor(cudnnHandle_t handle, const void* alpha,
                             const cudnnTensorDescriptor_t ad, const void* a, const void* beta,
                             const cudnnTensorDescriptor_t cd, void* c) {
  return broadcast_op(handle, "cudnnAddTensor", alpha, ad, a, beta, cd, c, false);
}

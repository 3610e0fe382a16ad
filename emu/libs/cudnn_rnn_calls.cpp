// The emulated cuDNN RNN executions: cudnnRNNForward, cudnnRNNBackwardData_v8 and
// cudnnRNNBackwardWeights_v8, each one piece of work on the handle's stream with the exact
// byte ranges of its operands, the weight space, workspace, reserve space and devSeqLengths.
// Before enqueueing, the descriptors are checked against each other as cuDNN documents
// them: x and y alike in layout, batch, lengths and type; y's vector D * hiddenSize; states
// [numLayers * D, batch, hiddenSize] fully packed; unpacked layouts only with
// CUDNN_RNN_PADDED_IO_ENABLED; spaces at least as large as the size queries give.
#include <string>

#include "emu/libs/cudnn_rnn_internal.h"

namespace sonata::emu::dnn {
namespace {

using sonata::emu::MemRange;

struct Call {
  const char* name;
  cudnnStatus_t bad(const std::string& what) const {
    return fail(CUDNN_STATUS_BAD_PARAM, std::string(name) + ": " + what);
  }
};

cudnnStatus_t check_data(const Call& call, const cudnnRNNStruct* rnn, const RnnGeometry& g,
                         const cudnnRNNDataStruct* d, int vector, const char* which) {
  if (!d || !d->set) return call.bad(std::string(which) + " is null or was never set");
  if (d->type != rnn->data)
    return call.bad(std::string(which) + "'s data type " + std::to_string(d->type) +
                    " is not the RNN's " + std::to_string(rnn->data));
  if (d->vector != vector)
    return call.bad(std::string(which) + "'s vectorSize is " + std::to_string(d->vector) +
                    " but the RNN needs " + std::to_string(vector));
  if (d->layout != CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_PACKED &&
      !(rnn->aux & CUDNN_RNN_PADDED_IO_ENABLED))
    return call.bad(std::string(which) +
                    " has an unpacked layout but the RNN descriptor's auxFlags lack "
                    "CUDNN_RNN_PADDED_IO_ENABLED");
  (void)g;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t check_pair(const Call& call, const cudnnRNNDataStruct& x,
                         const cudnnRNNDataStruct& y) {
  if (x.layout != y.layout || x.batch != y.batch || x.max_seq != y.max_seq ||
      x.lengths != y.lengths)
    return call.bad("xDesc and yDesc differ in layout, batch, maxSeqLength or seqLengthArray");
  return CUDNN_STATUS_SUCCESS;
}

// A state descriptor [numLayers * D, batch, hiddenSize], fully packed, in the RNN's type.
cudnnStatus_t check_state(const Call& call, const cudnnRNNStruct* rnn, const RnnGeometry& g,
                          const cudnnTensorStruct* s, int batch, const char* which) {
  if (!s || !s->set) return call.bad(std::string(which) + " is null or was never set");
  if (s->type != rnn->data) return call.bad(std::string(which) + "'s data type differs");
  if (s->nb_dims != 3 || s->n != g.pseudo_layers() || s->c != batch || s->h != g.hidden ||
      s->hs != 1 || s->cs != g.hidden || s->ns != int64_t(batch) * g.hidden)
    return call.bad(std::string(which) + " must be a packed 3-d [" +
                    std::to_string(g.pseudo_layers()) + ", " + std::to_string(batch) + ", " +
                    std::to_string(g.hidden) + "] descriptor");
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t check_space(const Call& call, const char* which, size_t given, size_t needed,
                          const void* data) {
  if (given < needed)
    return call.bad(std::string(which) + " size " + std::to_string(given) + " is less than the " +
                    std::to_string(needed) + " bytes needed");
  if (needed > 0 && !data) return call.bad(std::string("null ") + which);
  return CUDNN_STATUS_SUCCESS;
}

MemRange range_of(const void* data, int64_t elements, Elem elem) {
  return {data, size_t(elements) * size_t(elem_size(elem))};
}

// What every pass shares: descriptors, spaces and devSeqLengths checked; the operand struct
// and work filled with the ranges common to all three.
struct Prepared {
  RnnOperands op;
  Work work;
  size_t reserve_needed = 0;
};

cudnnStatus_t prepare(const Call& call, cudnnHandle_t handle, const cudnnRNNStruct* rnn,
                      const int32_t* dev_lengths, const cudnnRNNDataStruct* xd,
                      const cudnnRNNDataStruct* yd, size_t weight_bytes, const void* weights,
                      size_t workspace_bytes, void* workspace, size_t reserve_bytes, void* reserve,
                      bool training, Prepared* out) {
  if (const cudnnStatus_t s = check_stream(handle, call.name); s != CUDNN_STATUS_SUCCESS) return s;
  RnnGeometry& g = out->op.g;
  if (const cudnnStatus_t s = rnn_geometry(rnn, call.name, &g); s != CUDNN_STATUS_SUCCESS) return s;
  if (const cudnnStatus_t s = check_data(call, rnn, g, xd, g.input, "xDesc");
      s != CUDNN_STATUS_SUCCESS)
    return s;
  if (const cudnnStatus_t s = check_data(call, rnn, g, yd, g.directions * g.hidden, "yDesc");
      s != CUDNN_STATUS_SUCCESS)
    return s;
  if (const cudnnStatus_t s = check_pair(call, *xd, *yd); s != CUDNN_STATUS_SUCCESS) return s;
  const size_t elem_bytes = size_t(elem_size(g.elem));
  if (const cudnnStatus_t s = check_space(call, "weightSpace", weight_bytes,
                                          size_t(g.weight_elements()) * elem_bytes, weights);
      s != CUDNN_STATUS_SUCCESS)
    return s;
  if (const cudnnStatus_t s =
          check_space(call, "workSpace", workspace_bytes, rnn_workspace_bytes(g, *xd), workspace);
      s != CUDNN_STATUS_SUCCESS)
    return s;
  out->reserve_needed = training ? rnn_reserve_bytes(g, *xd) : 0;
  if (const cudnnStatus_t s =
          check_space(call, "reserveSpace", reserve_bytes, out->reserve_needed, reserve);
      s != CUDNN_STATUS_SUCCESS)
    return s;
  // cuDNN reads the lengths on the device as well (a copy of seqLengthArray).
  if (!dev_lengths)
    return call.bad(
        "devSeqLengths is null (it must be a device copy of "
        "seqLengthArray)");
  out->op.x = *xd;
  out->op.y = *yd;
  out->op.weights = weights;
  out->op.workspace = workspace;
  out->op.workspace_bytes = rnn_workspace_bytes(g, *xd);
  out->op.reserve = static_cast<double*>(reserve);
  out->work.name = call.name;
  // For the emulated profile: every pass multiplies each valid frame by the gates' input and
  // recurrent matrices (2 G H (in + H) FLOPs a frame, layer and direction); bytes are the
  // call's ranges.
  double frames = 0;
  for (const int length : xd->lengths) frames += length;
  double flops = 0;
  for (int pseudo = 0; pseudo < g.pseudo_layers(); ++pseudo)
    flops += 2.0 * g.gates * g.hidden * double(g.layer_input(pseudo) + g.hidden) * frames;
  out->work.kind = sonata::emu::WorkKind::library;
  out->work.cost = {.flops = flops,
                    .math = g.elem == Elem::f16 ? "tensor16"
                            : g.elem == Elem::f64 ? "fp64"
                            : g.tf32              ? "tf32"
                                                  : "fp32",
                    .library = "cudnn.rnn"};
  out->work.reads.push_back({dev_lengths, size_t(xd->batch) * sizeof(int32_t)});
  out->work.writes.push_back({workspace, out->op.workspace_bytes});
  return CUDNN_STATUS_SUCCESS;
}

// The states' shared checks: a descriptor given is checked, and one is needed where any of
// its pointers is given.
cudnnStatus_t check_states(const Call& call, const cudnnRNNStruct* rnn, const RnnGeometry& g,
                           int batch, const cudnnTensorStruct* hd, bool any_h,
                           const cudnnTensorStruct* cd, bool any_c) {
  if (any_h || hd)
    if (const cudnnStatus_t s = check_state(call, rnn, g, hd, batch, "hDesc");
        s != CUDNN_STATUS_SUCCESS)
      return s;
  if ((any_c || cd) && g.gates == 4)
    if (const cudnnStatus_t s = check_state(call, rnn, g, cd, batch, "cDesc");
        s != CUDNN_STATUS_SUCCESS)
      return s;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t enqueue_work(const Call& call, cudnnHandle_t handle, Work work) {
  if (enqueue(handle->stream, std::move(work)) != cudaSuccess)
    return fail(CUDNN_STATUS_EXECUTION_FAILED, std::string(call.name) + ": could not enqueue");
  return CUDNN_STATUS_SUCCESS;
}

}  // namespace
}  // namespace sonata::emu::dnn

using namespace sonata::emu::dnn;
using sonata::emu::Elem;
using sonata::emu::Work;

cudnnStatus_t cudnnRNNForward(cudnnHandle_t handle, cudnnRNNDescriptor_t rnn,
                              cudnnForwardMode_t mode, const int32_t dev_lengths[],
                              cudnnRNNDataDescriptor_t xd, const void* x,
                              cudnnRNNDataDescriptor_t yd, void* y, cudnnTensorDescriptor_t hd,
                              const void* hx, void* hy, cudnnTensorDescriptor_t cd, const void* cx,
                              void* cy, size_t weight_bytes, const void* weights,
                              size_t workspace_bytes, void* workspace, size_t reserve_bytes,
                              void* reserve) {
  const Call call{"cudnnRNNForward"};
  if (mode != CUDNN_FWD_MODE_INFERENCE && mode != CUDNN_FWD_MODE_TRAINING)
    return call.bad("fwdMode " + std::to_string(mode));
  Prepared p;
  if (const cudnnStatus_t s =
          prepare(call, handle, rnn, dev_lengths, xd, yd, weight_bytes, weights, workspace_bytes,
                  workspace, reserve_bytes, reserve, mode == CUDNN_FWD_MODE_TRAINING, &p);
      s != CUDNN_STATUS_SUCCESS)
    return s;
  const RnnGeometry& g = p.op.g;
  if (!x || !y) return call.bad("null x or y");
  if (const cudnnStatus_t s = check_states(call, rnn, g, xd->batch, hd, hx || hy, cd, cx || cy);
      s != CUDNN_STATUS_SUCCESS)
    return s;
  const int64_t states = int64_t(g.pseudo_layers()) * xd->batch * g.hidden;
  p.op.x_data = x, p.op.y_data = y, p.op.hx = hx, p.op.hy = hy;
  const bool lstm = g.gates == 4;
  p.op.cx = lstm ? cx : nullptr, p.op.cy = lstm ? cy : nullptr;
  Work& work = p.work;
  add_range(work.reads, range_of(x, rnn_data_elements(*xd), g.elem));
  add_range(work.reads, range_of(weights, g.weight_elements(), g.elem));
  if (hx) work.reads.push_back(range_of(hx, states, g.elem));
  if (p.op.cx) work.reads.push_back(range_of(cx, states, g.elem));
  work.writes.push_back(range_of(y, rnn_data_elements(*yd), g.elem));
  if (hy) work.writes.push_back(range_of(hy, states, g.elem));
  if (p.op.cy) work.writes.push_back(range_of(cy, states, g.elem));
  if (p.reserve_needed > 0)
    work.writes.push_back({reserve, p.reserve_needed});
  else
    p.op.reserve = nullptr;
  const RnnOperands op = p.op;
  work.run = [op] { rnn_forward(op); };
  return enqueue_work(call, handle, std::move(work));
}

cudnnStatus_t cudnnRNNBackwardData_v8(cudnnHandle_t handle, cudnnRNNDescriptor_t rnn,
                                      const int32_t dev_lengths[], cudnnRNNDataDescriptor_t yd,
                                      const void* y, const void* dy, cudnnRNNDataDescriptor_t xd,
                                      void* dx, cudnnTensorDescriptor_t hd, const void* hx,
                                      const void* dhy, void* dhx, cudnnTensorDescriptor_t cd,
                                      const void* cx, const void* dcy, void* dcx,
                                      size_t weight_bytes, const void* weights,
                                      size_t workspace_bytes, void* workspace, size_t reserve_bytes,
                                      void* reserve) {
  const Call call{"cudnnRNNBackwardData_v8"};
  Prepared p;
  if (const cudnnStatus_t s = prepare(call, handle, rnn, dev_lengths, xd, yd, weight_bytes, weights,
                                      workspace_bytes, workspace, reserve_bytes, reserve, true, &p);
      s != CUDNN_STATUS_SUCCESS)
    return s;
  const RnnGeometry& g = p.op.g;
  if (!y || !dy || !dx) return call.bad("null y, dy or dx");
  if (const cudnnStatus_t s =
          check_states(call, rnn, g, xd->batch, hd, hx || dhy || dhx, cd, cx || dcy || dcx);
      s != CUDNN_STATUS_SUCCESS)
    return s;
  const int64_t states = int64_t(g.pseudo_layers()) * xd->batch * g.hidden;
  const bool lstm = g.gates == 4;
  p.op.y_data = const_cast<void*>(dy), p.op.dx = dx;
  p.op.hx = hx, p.op.dhy = dhy, p.op.dhx = dhx;
  p.op.cx = lstm ? cx : nullptr, p.op.dcy = lstm ? dcy : nullptr, p.op.dcx = lstm ? dcx : nullptr;
  Work& work = p.work;
  work.reads.push_back(range_of(y, rnn_data_elements(*yd), g.elem));
  work.reads.push_back(range_of(dy, rnn_data_elements(*yd), g.elem));
  add_range(work.reads, range_of(weights, g.weight_elements(), g.elem));
  work.reads.push_back({reserve, p.reserve_needed});
  for (const void* s : {hx, dhy, p.op.cx, p.op.dcy})
    if (s) work.reads.push_back(range_of(s, states, g.elem));
  work.writes.push_back(range_of(dx, rnn_data_elements(*xd), g.elem));
  for (const void* s : {static_cast<const void*>(dhx), static_cast<const void*>(p.op.dcx)})
    if (s) work.writes.push_back(range_of(s, states, g.elem));
  work.writes.push_back({reserve, p.reserve_needed});
  const RnnOperands op = p.op;
  work.run = [op] { rnn_backward_data(op); };
  return enqueue_work(call, handle, std::move(work));
}

cudnnStatus_t cudnnRNNBackwardWeights_v8(cudnnHandle_t handle, cudnnRNNDescriptor_t rnn,
                                         cudnnWgradMode_t add, const int32_t dev_lengths[],
                                         cudnnRNNDataDescriptor_t xd, const void* x,
                                         cudnnTensorDescriptor_t hd, const void* hx,
                                         cudnnRNNDataDescriptor_t yd, const void* y,
                                         size_t weight_bytes, void* dweights,
                                         size_t workspace_bytes, void* workspace,
                                         size_t reserve_bytes, void* reserve) {
  const Call call{"cudnnRNNBackwardWeights_v8"};
  // cuDNN 9 documents CUDNN_WGRAD_MODE_ADD as the only mode it supports.
  if (add != CUDNN_WGRAD_MODE_ADD)
    return fail(CUDNN_STATUS_NOT_SUPPORTED,
                std::string(call.name) + ": addGrad must be CUDNN_WGRAD_MODE_ADD");
  Prepared p;
  if (const cudnnStatus_t s =
          prepare(call, handle, rnn, dev_lengths, xd, yd, weight_bytes, dweights, workspace_bytes,
                  workspace, reserve_bytes, reserve, true, &p);
      s != CUDNN_STATUS_SUCCESS)
    return s;
  const RnnGeometry& g = p.op.g;
  if (!x || !y) return call.bad("null x or y");
  if (const cudnnStatus_t s =
          check_states(call, rnn, g, xd->batch, hd, hx != nullptr, nullptr, false);
      s != CUDNN_STATUS_SUCCESS)
    return s;
  const int64_t states = int64_t(g.pseudo_layers()) * xd->batch * g.hidden;
  p.op.x_data = x, p.op.hx = hx;
  p.op.weights = nullptr, p.op.dweights = dweights;
  Work& work = p.work;
  add_range(work.reads, range_of(x, rnn_data_elements(*xd), g.elem));
  work.reads.push_back(range_of(y, rnn_data_elements(*yd), g.elem));
  if (hx) work.reads.push_back(range_of(hx, states, g.elem));
  work.reads.push_back({reserve, p.reserve_needed});
  // ADD: dweightSpace is read and accumulated into.
  work.reads.push_back(range_of(dweights, g.weight_elements(), g.elem));
  work.writes.push_back(range_of(dweights, g.weight_elements(), g.elem));
  const RnnOperands op = p.op;
  work.run = [op] { rnn_backward_weights(op); };
  return enqueue_work(call, handle, std::move(work));
}

#include "engine/ops/rnn_fused.h"

#include <atomic>
#include <string>

#include "base/error.h"
#include "engine/autograd/grad_mode.h"
#include "engine/autograd/record.h"
#include "engine/ops.h"
#include "engine/ops/op_utils.h"
#if SONATA_WITH_CUDA
#include "engine/cuda/stream.h"
#include "kernels/cuda/rnn_cudnn.h"
#endif

namespace sonata {

#if SONATA_WITH_CUDA
namespace {

using kernels::cuda::RnnCell;
using kernels::cuda::RnnShape;
using kernels::cuda::RnnWeightLayout;

// The parameters' shapes in torch's order for pseudo-layer p.
std::vector<Shape> param_shapes(const RnnShape& s, int64_t p) {
  const int64_t rows = s.gates() * s.hidden;
  const int64_t in = p < s.directions() ? s.input : s.hidden * s.directions();
  std::vector<Shape> shapes{{rows, in}, {rows, s.hidden}};
  if (s.bias) shapes.insert(shapes.end(), {{rows}, {rows}});
  return shapes;
}

// Parameter k's gate blocks in the weight space: one contiguous run when cuDNN placed them in
// torch's order back to back (then its gradient is a view of the gradient space), else each
// gate apart.
struct Blocks {
  std::vector<int64_t> offsets;  // of each run
  int64_t run = 0;               // elements per run
};
Blocks blocks_of(const std::vector<int64_t>& gate_offsets, int64_t numel) {
  const int64_t gates = int64_t(gate_offsets.size()), block = numel / gates;
  bool contiguous = true;
  for (int64_t g = 1; g < gates; ++g)
    contiguous = contiguous && gate_offsets[size_t(g)] == gate_offsets[0] + g * block;
  if (contiguous) return {{gate_offsets[0]}, numel};
  return {gate_offsets, block};
}

}  // namespace
#endif

namespace {
std::atomic<bool> fused_enabled{true};
}  // namespace

void set_fused_rnn_enabled(bool enabled) {
  fused_enabled = enabled;
}

bool fused_rnn_available(const Tensor& x) {
#if SONATA_WITH_CUDA
  return fused_enabled && x.defined() && x.device().is_cuda() &&
         kernels::cuda::rnn_cudnn_supports(x.dtype());
#else
  (void)x;
  return false;
#endif
}

FusedRnnResult fused_rnn(const FusedRnnOptions& options, const Tensor& x,
                         const std::vector<Tensor>& params, const std::vector<int64_t>& lengths,
                         const Tensor& h0, const Tensor& c0) {
#if SONATA_WITH_CUDA
  SONATA_CHECK(x.defined() && x.device().is_cuda() && kernels::cuda::rnn_cudnn_supports(x.dtype()),
               "fused_rnn: the input must be an f16, f32 or f64 CUDA ",
               "tensor in a build with cuDNN, got ",
               x.defined() ? std::string(dtype_name(x.dtype())) + " on " + x.device().str()
                           : std::string("undefined"));
  SONATA_CHECK(x.dim() == 3, "fused_rnn: the input must be [T, N, in], got ", shape_str(x.shape()));
  const RnnShape s{options.lstm ? RnnCell::lstm : RnnCell::gru,
                   x.size(2),
                   options.hidden,
                   options.layers,
                   options.bidirectional,
                   options.bias};
  const int64_t steps = x.size(0), batch = x.size(1), rows = s.layers * s.directions();
  const int64_t per_layer = options.bias ? 4 : 2;
  SONATA_CHECK(int64_t(params.size()) == rows * per_layer, "fused_rnn: ", rows * per_layer,
               " parameters expected, got ", params.size());
  for (int64_t p = 0; p < rows; ++p) {
    const std::vector<Shape> shapes = param_shapes(s, p);
    for (int64_t k = 0; k < per_layer; ++k) {
      const Tensor& t = params[size_t(p * per_layer + k)];
      SONATA_CHECK(t.defined() && t.shape() == shapes[size_t(k)], "fused_rnn: parameter ",
                   p * per_layer + k, " must be ", shape_str(shapes[size_t(k)]), ", got ",
                   t.defined() ? shape_str(t.shape()) : std::string("undefined"));
    }
  }
  const Shape state_shape{rows, batch, s.hidden};
  for (const Tensor* state : {&h0, &c0})
    SONATA_CHECK(!state->defined() || state->shape() == state_shape,
                 "fused_rnn: h0 and c0 must be ", shape_str(state_shape), ", got ",
                 shape_str(state->shape()));
  SONATA_CHECK(options.lstm || !c0.defined(), "fused_rnn: the GRU takes no c0");
  std::vector<Tensor> all{x};
  all.insert(all.end(), params.begin(), params.end());
  if (h0.defined()) all.push_back(h0);
  if (c0.defined()) all.push_back(c0);
  for (const Tensor& t : all)
    SONATA_CHECK(t.dtype() == x.dtype(), "fused_rnn: mixed dtypes ", dtype_name(t.dtype()), " and ",
                 dtype_name(x.dtype()));
  check_same_device("fused_rnn", all);
  SONATA_CHECK(lengths.empty() || int64_t(lengths.size()) == batch, "fused_rnn: ", batch,
               " lengths expected, got ", lengths.size());

  // Training (cuDNN keeps what backward needs in a reserve space) only when a gradient
  // will be asked for.
  const bool keep_for_backward = needs_grad(all);
  const Device device = x.device();
  const DType dtype = x.dtype();
  const cudaStream_t stream = current_stream(device.index);
  FusedRnnResult out;
  // Every frame is written: cuDNN fills the padded ones with the descriptor's 0.
  out.output = empty({steps, batch, s.directions() * s.hidden}, x.options());
  out.h_n = empty(state_shape, x.options());
  if (options.lstm) out.c_n = empty(state_shape, x.options());
  NoGradGuard no_grad;
  if (steps == 0 || batch == 0) {
    // Nothing runs: the final states are the initial ones (and no gradient flows).
    out.h_n = h0.defined() ? h0.detach().clone() : zeros(state_shape, x.options());
    if (options.lstm)
      out.c_n = c0.defined() ? c0.detach().clone() : zeros(state_shape, x.options());
    return out;
  }
  std::vector<int32_t> len32(static_cast<size_t>(batch), static_cast<int32_t>(steps));
  for (size_t b = 0; b < lengths.size(); ++b) {
    SONATA_CHECK(lengths[b] >= 0 && lengths[b] <= steps, "fused_rnn: lengths[", b,
                 "] = ", lengths[b], " is outside [0, ", steps, "]");
    len32[b] = int32_t(lengths[b]);
  }

  // The weight space, filled from torch's parameters at the places cuDNN gives.
  const int64_t elem = int64_t(dtype_size(dtype));
  const size_t weight_bytes = kernels::cuda::rnn_weight_space_bytes(dtype, s, stream);
  const int64_t weight_elems = int64_t(weight_bytes) / elem;
  Tensor weights = empty({weight_elems}, x.options());
  const RnnWeightLayout layout =
      kernels::cuda::rnn_weight_layout(dtype, s, weights.data_ptr(), stream);
  int64_t covered = 0;
  for (const Tensor& p : params) covered += p.numel();
  // Bytes of the space no parameter fills (padding cuDNN may keep) are zeroed, never left
  // uninitialised.
  if (covered != weight_elems) weights.zero_();
  for (int64_t p = 0; p < rows; ++p)
    for (int64_t k = 0; k < per_layer; ++k) {
      const Tensor flat = params[size_t(p * per_layer + k)].detach().reshape({-1});
      const Blocks blocks = blocks_of(layout.offsets[size_t(p)][size_t(k)], flat.numel());
      for (size_t r = 0; r < blocks.offsets.size(); ++r)
        weights.slice(0, blocks.offsets[r], blocks.offsets[r] + blocks.run)
            .copy_(flat.slice(0, int64_t(r) * blocks.run, int64_t(r + 1) * blocks.run));
    }
  const Tensor dev_lengths =
      from_host(len32.data(), {batch}, DType::i32, x.options().with(DType::i32));
  const Tensor xc = x.detach().contiguous();
  const Tensor hx = h0.defined() ? h0.detach().contiguous() : Tensor();
  const Tensor cx = c0.defined() ? c0.detach().contiguous() : Tensor();
  auto data_or_null = [](const Tensor& t) -> void* { return t.defined() ? t.data_ptr() : nullptr; };

  const size_t reserve_bytes =
      keep_for_backward ? kernels::cuda::rnn_reserve_bytes(dtype, s, steps, len32, stream) : 0;
  Tensor reserve =
      keep_for_backward ? empty({int64_t(reserve_bytes)}, x.options().with(DType::u8)) : Tensor();
  kernels::cuda::rnn_forward(
      dtype, s, steps, len32, dev_lengths.data<int32_t>(), xc.data_ptr(), data_or_null(hx),
      data_or_null(cx), weights.data_ptr(), out.output.data_ptr(), out.h_n.data_ptr(),
      options.lstm ? out.c_n.data_ptr() : nullptr, data_or_null(reserve), reserve_bytes, stream);
  if (!keep_for_backward) return out;

  const Tensor y = save(out.output);
  GradMode::set_enabled(true);  // record() below; the guard restores the caller's mode
  const bool has_h0 = h0.defined(), has_c0 = c0.defined();
  std::vector<Tensor*> outputs{&out.output, &out.h_n};
  if (options.lstm) outputs.push_back(&out.c_n);
  BackwardFn backward = [=](const std::vector<Tensor>& grads) {
    NoGradGuard no_grad;
    const cudaStream_t bstream = current_stream(device.index);
    const Tensor dy = grads[0].defined() ? grads[0].contiguous() : zeros(y.shape(), y.options());
    const Tensor dhy = grads[1].defined() ? grads[1].contiguous() : Tensor();
    const Tensor dcy =
        s.cell == RnnCell::lstm && grads[2].defined() ? grads[2].contiguous() : Tensor();
    Tensor dx = empty(xc.shape(), xc.options());
    Tensor dhx = has_h0 ? empty(hx.shape(), hx.options()) : Tensor();
    Tensor dcx = has_c0 ? empty(cx.shape(), cx.options()) : Tensor();
    // CUDNN_WGRAD_MODE_ADD accumulates: the gradient space starts at 0.
    Tensor dweights = zeros({weight_elems}, xc.options());
    Tensor reserve_rw = reserve;
    kernels::cuda::rnn_backward(
        dtype, s, steps, len32, dev_lengths.data<int32_t>(), xc.data_ptr(),
        hx.defined() ? hx.data_ptr() : nullptr, cx.defined() ? cx.data_ptr() : nullptr,
        weights.data_ptr(), y.data_ptr(), dy.data_ptr(), dhy.defined() ? dhy.data_ptr() : nullptr,
        dcy.defined() ? dcy.data_ptr() : nullptr, dx.data_ptr(),
        dhx.defined() ? dhx.data_ptr() : nullptr, dcx.defined() ? dcx.data_ptr() : nullptr,
        dweights.data_ptr(), reserve_rw.data_ptr(), reserve_bytes, bstream);
    std::vector<Tensor> result{dx};
    for (int64_t p = 0; p < rows; ++p) {
      const std::vector<Shape> shapes = param_shapes(s, p);
      for (int64_t k = 0; k < per_layer; ++k) {
        const Shape& shape = shapes[size_t(k)];
        int64_t numel = 1;
        for (int64_t d : shape) numel *= d;
        const Blocks blocks = blocks_of(layout.offsets[size_t(p)][size_t(k)], numel);
        std::vector<Tensor> runs;
        for (int64_t at : blocks.offsets) runs.push_back(dweights.slice(0, at, at + blocks.run));
        result.push_back((runs.size() == 1 ? runs[0] : cat(runs, 0)).view(shape));
      }
    }
    if (has_h0) result.push_back(dhx);
    if (has_c0) result.push_back(dcx);
    return result;
  };
  record("fused_rnn", all, outputs, std::move(backward));
  return out;
#else
  (void)options, (void)x, (void)params, (void)lengths, (void)h0, (void)c0;
  throw Error("fused_rnn: this build has no CUDA");
#endif
}

}  // namespace sonata

#include "engine/ops/conv.h"

#include <string>

#include "base/error.h"
#include "engine/autograd/record.h"
#include "engine/ops.h"
#include "engine/ops/backend.h"
#include "engine/ops/memory_format.h"
#include "engine/ops/op_utils.h"
#include "kernels/common/conv_shape.h"
#include "kernels/cpu/conv.h"
#if SONATA_WITH_CUDA
#include "kernels/cuda/conv.h"
#endif

namespace sonata {
namespace {

using kernels::Conv2dShape;
using kernels::ConvPass;

std::string pair_str(const std::array<int64_t, 2>& p) {
  return str("(", p[0], ", ", p[1], ")");
}

void check_conv_inputs(const Tensor& x, const Tensor& weight, const Tensor& bias,
                       const Conv2dParams& p) {
  SONATA_CHECK(x.defined() && weight.defined(), "conv2d: input and weight must be defined");
  std::vector<Tensor> all{x, weight};
  if (bias.defined()) all.push_back(bias);
  check_same_device("conv2d", all);
  check_floating("conv2d", x);
  for (const Tensor& t : all)
    SONATA_CHECK(t.dtype() == x.dtype(), "conv2d: input is ", dtype_name(x.dtype()),
                 " but a parameter is ", dtype_name(t.dtype()), " (cast one of them)");
  SONATA_CHECK(x.dim() == 4, "conv2d: input must be 4-D [N, C, H, W], got ", shape_str(x.shape()));
  SONATA_CHECK(weight.dim() == 4, "conv2d: weight must be 4-D [C_out, C_in, kh, kw], got ",
               shape_str(weight.shape()));
  SONATA_CHECK(weight.numel() > 0, "conv2d: weight ", shape_str(weight.shape()), " is empty");
  SONATA_CHECK(x.shape()[1] == weight.shape()[1], "conv2d: input has ", x.shape()[1],
               " channels but weight ", shape_str(weight.shape()), " expects ", weight.shape()[1]);
  if (bias.defined())
    SONATA_CHECK(bias.dim() == 1 && bias.shape()[0] == weight.shape()[0], "conv2d: bias ",
                 shape_str(bias.shape()), " does not match the ", weight.shape()[0],
                 " output channels of weight ", shape_str(weight.shape()));
  for (int d = 0; d < 2; ++d) {
    SONATA_CHECK(p.stride[d] > 0, "conv2d: stride ", pair_str(p.stride), " must be positive");
    SONATA_CHECK(p.dilation[d] > 0, "conv2d: dilation ", pair_str(p.dilation), " must be positive");
    SONATA_CHECK(p.padding[d] >= 0, "conv2d: padding ", pair_str(p.padding),
                 " must not be negative");
    const int64_t padded = x.shape()[2 + d] + 2 * p.padding[d];
    const int64_t extent = p.dilation[d] * (weight.shape()[2 + d] - 1) + 1;
    SONATA_CHECK(extent <= padded, "conv2d: kernel ", weight.shape()[2], "x", weight.shape()[3],
                 " (dilated extent ", extent, ") is larger than the padded input ",
                 x.shape()[2] + 2 * p.padding[0], "x", x.shape()[3] + 2 * p.padding[1]);
  }
}

Conv2dShape conv_shape(const Tensor& x, const Tensor& weight, const Conv2dParams& p) {
  Conv2dShape s;
  s.n = x.shape()[0];
  s.c_in = x.shape()[1];
  s.h = x.shape()[2];
  s.w = x.shape()[3];
  s.c_out = weight.shape()[0];
  s.kh = weight.shape()[2];
  s.kw = weight.shape()[3];
  s.stride_h = p.stride[0];
  s.stride_w = p.stride[1];
  s.pad_h = p.padding[0];
  s.pad_w = p.padding[1];
  s.dil_h = p.dilation[0];
  s.dil_w = p.dilation[1];
  s.h_out = (s.h + 2 * s.pad_h - s.dil_h * (s.kh - 1) - 1) / s.stride_h + 1;
  s.w_out = (s.w + 2 * s.pad_w - s.dil_w * (s.kw - 1) - 1) / s.stride_w + 1;
  return s;
}

// Scratch for one pass, as a u8 tensor on the op's device, so that CUDA workspaces come
// from the stream-ordered allocator and are reused across layers.
Tensor conv_workspace(const Tensor& like, const Conv2dShape& s, ConvPass pass) {
  const size_t bytes = SONATA_BACKEND(like.device(), conv2d_workspace_bytes, like.dtype(), s, pass);
  if (bytes == 0) return Tensor();
  return empty({int64_t(bytes)}, TensorOptions{}.with(DType::u8).with(like.device()));
}

void* pointer_of(const Tensor& t) {
  return t.defined() ? t.data_ptr() : nullptr;
}
size_t bytes_of(const Tensor& t) {
  return t.defined() ? size_t(t.numel()) : 0;
}

}  // namespace

Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias,
              const Conv2dParams& params) {
  check_conv_inputs(x, weight, bias, params);
  const bool channels_last = prefers_channels_last(x);
  // The CPU kernels are the NCHW reference: channels-last input is converted there and the
  // output converted back, so that the layout still flows through the model as on CUDA.
  if (channels_last && !x.device().is_cuda())
    return to_channels_last(conv2d(to_contiguous_nchw(x), weight, bias, params));

  Conv2dShape s = conv_shape(x, weight, params);
  s.channels_last = channels_last;
  // Channels-last x is already dense NHWC; the filter is copied to [c_out, kh, kw, c_in] (a
  // few MiB, against activations of hundreds), so parameters stay plain contiguous tensors.
  const Tensor xc = channels_last ? x : x.contiguous();
  const Tensor wc =
      channels_last ? weight.detach().permute({0, 2, 3, 1}).contiguous() : weight.contiguous();
  const Tensor bc = bias.defined() ? bias.contiguous() : Tensor();
  const Shape out_shape{s.n, s.c_out, s.h_out, s.w_out}, x_shape{s.n, s.c_in, s.h, s.w};
  Tensor out =
      channels_last ? empty_channels_last(out_shape, x.options()) : empty(out_shape, x.options());
  if (out.numel() > 0) {
    const Tensor workspace = conv_workspace(xc, s, ConvPass::forward);
    SONATA_BACKEND(xc.device(), conv2d_forward, xc.dtype(), s, xc.data_ptr(), wc.data_ptr(),
                   pointer_of(bc), out.data_ptr(), pointer_of(workspace), bytes_of(workspace));
  }

  // Which gradients anyone asked for is known now; the others are never computed (the
  // first layer's input gradient is a whole GEMM plus col2im).
  const bool need_x = x.requires_grad(), need_w = weight.requires_grad();
  const bool need_b = bias.defined() && bias.requires_grad();
  const Tensor saved_x = need_w ? save(xc) : Tensor(), saved_w = need_x ? save(wc) : Tensor();
  record("conv2d", {x, weight, bias}, {&out}, [=](const std::vector<Tensor>& g) {
    const Tensor gy = channels_last ? to_channels_last(g[0]) : g[0].contiguous();
    std::vector<Tensor> grads(3);
    if (gy.numel() == 0) {  // no output, nothing flows back: every gradient is zero
      if (need_x) grads[0] = zeros(x_shape, gy.options());
      if (need_w) grads[1] = zeros({s.c_out, s.c_in, s.kh, s.kw}, gy.options());
      if (need_b) grads[2] = zeros({s.c_out}, gy.options());
      return grads;
    }
    if (need_x) {
      grads[0] =
          channels_last ? empty_channels_last(x_shape, gy.options()) : empty(x_shape, gy.options());
      const Tensor workspace = conv_workspace(gy, s, ConvPass::backward_input);
      SONATA_BACKEND(gy.device(), conv2d_backward_input, gy.dtype(), s, gy.data_ptr(),
                     saved_w.data_ptr(), grads[0].data_ptr(), pointer_of(workspace),
                     bytes_of(workspace));
    }
    if (need_w) {
      // The bias gradient rides along: it sums the same grad_y the weight's product reads.
      const Tensor grad_w = channels_last ? empty({s.c_out, s.kh, s.kw, s.c_in}, gy.options())
                                          : empty({s.c_out, s.c_in, s.kh, s.kw}, gy.options());
      if (need_b) grads[2] = empty({s.c_out}, gy.options());
      const Tensor workspace = conv_workspace(gy, s, ConvPass::backward_weight);
      SONATA_BACKEND(gy.device(), conv2d_backward_weight, gy.dtype(), s, gy.data_ptr(),
                     saved_x.data_ptr(), grad_w.data_ptr(), pointer_of(grads[2]),
                     pointer_of(workspace), bytes_of(workspace));
      grads[1] = channels_last ? grad_w.permute({0, 3, 1, 2}).contiguous() : grad_w;
    } else if (need_b) {
      grads[2] = sum(gy, {0, 2, 3});
    }
    return grads;
  });
  return out;
}

}  // namespace sonata

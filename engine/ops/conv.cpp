#include "engine/ops/conv.h"

#include <string>

#include "base/error.h"
#include "engine/autograd/record.h"
#include "engine/ops.h"
#include "engine/ops/backend.h"
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
  const Conv2dShape s = conv_shape(x, weight, params);
  const Tensor xc = x.contiguous(), wc = weight.contiguous();
  const Tensor bc = bias.defined() ? bias.contiguous() : Tensor();
  Tensor out = empty({s.n, s.c_out, s.h_out, s.w_out}, x.options());
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
    const Tensor gy = g[0].contiguous();
    std::vector<Tensor> grads(3);
    if (gy.numel() == 0) {  // no output, nothing flows back: every gradient is zero
      if (need_x) grads[0] = zeros({s.n, s.c_in, s.h, s.w}, gy.options());
      if (need_w) grads[1] = zeros({s.c_out, s.c_in, s.kh, s.kw}, gy.options());
      if (need_b) grads[2] = zeros({s.c_out}, gy.options());
      return grads;
    }
    if (need_x) {
      grads[0] = empty({s.n, s.c_in, s.h, s.w}, gy.options());
      const Tensor workspace = conv_workspace(gy, s, ConvPass::backward_input);
      SONATA_BACKEND(gy.device(), conv2d_backward_input, gy.dtype(), s, gy.data_ptr(),
                     saved_w.data_ptr(), grads[0].data_ptr(), pointer_of(workspace),
                     bytes_of(workspace));
    }
    if (need_w) {
      // The bias gradient rides along: it sums the same grad_y the weight's product reads.
      grads[1] = empty({s.c_out, s.c_in, s.kh, s.kw}, gy.options());
      if (need_b) grads[2] = empty({s.c_out}, gy.options());
      const Tensor workspace = conv_workspace(gy, s, ConvPass::backward_weight);
      SONATA_BACKEND(gy.device(), conv2d_backward_weight, gy.dtype(), s, gy.data_ptr(),
                     saved_x.data_ptr(), grads[1].data_ptr(), pointer_of(grads[2]),
                     pointer_of(workspace), bytes_of(workspace));
    } else if (need_b) {
      grads[2] = sum(gy, {0, 2, 3});
    }
    return grads;
  });
  return out;
}

}  // namespace sonata

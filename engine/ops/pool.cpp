#include "engine/ops/pool.h"

#include <string>

#include "base/error.h"
#include "engine/autograd/record.h"
#include "engine/ops/backend.h"
#include "engine/ops/memory_format.h"
#include "engine/ops/op_utils.h"
#include "kernels/common/conv_shape.h"
#include "kernels/cpu/pool.h"
#if SONATA_WITH_CUDA
#include "engine/ops/pool_channels_last.h"
#include "kernels/cuda/pool.h"
#endif

namespace sonata {
namespace {

using kernels::Pool2dShape;

std::string pair_str(const std::array<int64_t, 2>& p) {
  return str("(", p[0], ", ", p[1], ")");
}

// [N, C, H, W] or [C, H, W]: the planes and the size of one.
Pool2dShape plane_shape(const Tensor& x, const char* op) {
  SONATA_CHECK(x.defined(), op, ": the input is undefined");
  check_floating(op, x);
  SONATA_CHECK(x.dim() == 3 || x.dim() == 4, op, ": input must be [N, C, H, W] or [C, H, W], got ",
               shape_str(x.shape()));
  Pool2dShape s;
  s.h = x.size(-2);
  s.w = x.size(-1);
  s.planes = x.dim() == 4 ? x.size(0) * x.size(1) : x.size(0);
  SONATA_CHECK(s.h > 0 && s.w > 0, op, ": input ", shape_str(x.shape()), " has an empty plane");
  return s;
}

Shape pooled_shape(const Tensor& x, int64_t h_out, int64_t w_out) {
  Shape shape = x.shape();
  shape[shape.size() - 2] = h_out;
  shape[shape.size() - 1] = w_out;
  return shape;
}

// PyTorch's pooling_output_shape: floor (or ceil) of the window count, with ceil_mode never
// starting a window in the trailing padding.
int64_t pooled_size(int64_t in, int64_t kernel, int64_t pad, int64_t stride, int64_t dilation,
                    bool ceil_mode) {
  const int64_t span = in + 2 * pad - dilation * (kernel - 1) - 1 + (ceil_mode ? stride - 1 : 0);
  const int64_t floored = span >= 0 ? span / stride : -((-span + stride - 1) / stride);
  int64_t out = floored + 1;
  if (ceil_mode && (out - 1) * stride >= in + pad) --out;
  return out;
}

}  // namespace

std::pair<Tensor, Tensor> max_pool2d(const Tensor& x, std::array<int64_t, 2> kernel_size,
                                     std::array<int64_t, 2> stride, std::array<int64_t, 2> padding,
                                     std::array<int64_t, 2> dilation, bool ceil_mode) {
  Pool2dShape s = plane_shape(x, "max_pool2d");
  for (int d = 0; d < 2; ++d) {
    SONATA_CHECK(kernel_size[d] > 0, "max_pool2d: kernel size ", pair_str(kernel_size),
                 " must be positive");
    SONATA_CHECK(stride[d] > 0, "max_pool2d: stride ", pair_str(stride), " must be positive");
    SONATA_CHECK(dilation[d] > 0, "max_pool2d: dilation ", pair_str(dilation), " must be positive");
    SONATA_CHECK(padding[d] >= 0 && padding[d] <= kernel_size[d] / 2, "max_pool2d: padding ",
                 pair_str(padding), " must be between 0 and half the kernel size ",
                 pair_str(kernel_size));
  }
  s.kh = kernel_size[0];
  s.kw = kernel_size[1];
  s.stride_h = stride[0];
  s.stride_w = stride[1];
  s.pad_h = padding[0];
  s.pad_w = padding[1];
  s.dil_h = dilation[0];
  s.dil_w = dilation[1];
  s.h_out = pooled_size(s.h, s.kh, s.pad_h, s.stride_h, s.dil_h, ceil_mode);
  s.w_out = pooled_size(s.w, s.kw, s.pad_w, s.stride_w, s.dil_w, ceil_mode);
  SONATA_CHECK(s.h_out > 0 && s.w_out > 0, "max_pool2d: input ", shape_str(x.shape()),
               " is smaller than the dilated kernel ", pair_str(kernel_size), " with padding ",
               pair_str(padding), " (output would be ", s.h_out, "x", s.w_out, ")");

#if SONATA_WITH_CUDA
  if (prefers_channels_last(x) && x.device().is_cuda()) return max_pool2d_channels_last(x, s);
#endif
  // The CPU kernels are NCHW only: channels-last input pools through a converted copy and is
  // converted back, so that the layout flows on.
  if (prefers_channels_last(x)) {
    auto [pooled, where] =
        max_pool2d(to_contiguous_nchw(x), kernel_size, stride, padding, dilation, ceil_mode);
    return {to_channels_last(pooled), to_channels_last(where)};
  }
  const Tensor in = x.contiguous();
  Tensor out = empty(pooled_shape(x, s.h_out, s.w_out), x.options());
  Tensor indices = empty(out.shape(), x.options().with(DType::i64));
  if (out.numel() > 0)
    SONATA_BACKEND(in.device(), max_pool2d, in.dtype(), s, in.data_ptr(), out.data_ptr(),
                   indices.data<int64_t>());
  const Tensor saved_indices = save(indices);
  const Shape in_shape = x.shape();
  record("max_pool2d", {x}, {&out}, [=](const std::vector<Tensor>& g) {
    const Tensor gy = g[0].contiguous();
    Tensor gx = empty(in_shape, gy.options());  // the kernels write every element
    if (gx.numel() > 0)
      SONATA_BACKEND(gy.device(), max_pool2d_backward, gy.dtype(), s, gy.data_ptr(),
                     saved_indices.data<int64_t>(), gx.data_ptr());
    return std::vector<Tensor>{gx};
  });
  return {out, indices};
}

Tensor adaptive_avg_pool2d(const Tensor& x, std::array<int64_t, 2> output_size) {
  Pool2dShape s = plane_shape(x, "adaptive_avg_pool2d");
  SONATA_CHECK(output_size[0] > 0 && output_size[1] > 0, "adaptive_avg_pool2d: output size ",
               pair_str(output_size), " must be positive");
  s.h_out = output_size[0];
  s.w_out = output_size[1];
#if SONATA_WITH_CUDA
  if (prefers_channels_last(x) && x.device().is_cuda())
    return adaptive_avg_pool2d_channels_last(x, s);
#endif
  if (prefers_channels_last(x))  // NCHW kernels on the CPU, as max_pool2d
    return to_channels_last(adaptive_avg_pool2d(to_contiguous_nchw(x), output_size));
  const Tensor in = x.contiguous();
  Tensor out = empty(pooled_shape(x, s.h_out, s.w_out), x.options());
  if (out.numel() > 0)
    SONATA_BACKEND(in.device(), adaptive_avg_pool2d, in.dtype(), s, in.data_ptr(), out.data_ptr());
  const Shape in_shape = x.shape();
  record("adaptive_avg_pool2d", {x}, {&out}, [=](const std::vector<Tensor>& g) {
    const Tensor gy = g[0].contiguous();
    Tensor gx = empty(in_shape, gy.options());  // the kernels write every element
    if (gx.numel() > 0)
      SONATA_BACKEND(gy.device(), adaptive_avg_pool2d_backward, gy.dtype(), s, gy.data_ptr(),
                     gx.data_ptr());
    return std::vector<Tensor>{gx};
  });
  return out;
}

}  // namespace sonata

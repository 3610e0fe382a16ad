#include "engine/ops/pool_channels_last.h"

#include <vector>

#include "base/error.h"
#include "engine/autograd/record.h"
#include "engine/ops/memory_format.h"
#if SONATA_WITH_CUDA
#include "engine/cuda/stream.h"
#include "kernels/cuda/pool_channels_last.h"

namespace sonata {
namespace {

Shape pooled_shape(const Tensor& x, const kernels::Pool2dShape& s) {
  return {x.size(0), x.size(1), s.h_out, s.w_out};
}

// The kernels see N planes of C channels per pixel.
kernels::Pool2dShape per_image(kernels::Pool2dShape s, const Tensor& x) {
  s.planes = x.size(0);
  return s;
}

cudaStream_t stream_of(const Tensor& t) {
  return current_stream(t.device().index);
}

void require_cuda_channels_last(const Tensor& x, const char* op) {
  SONATA_CHECK(x.device().is_cuda() && x.dim() == 4 && prefers_channels_last(x), op,
               ": the channels-last path takes a channels-last [N, C, H, W] CUDA tensor, got ",
               shape_str(x.shape()), " on ", x.device().str());
}

}  // namespace

std::pair<Tensor, Tensor> max_pool2d_channels_last(const Tensor& x, kernels::Pool2dShape s) {
  require_cuda_channels_last(x, "max_pool2d");
  s = per_image(s, x);
  const int64_t channels = x.size(1);
  const Tensor in = to_channels_last(x.detach());
  Tensor out = empty_channels_last(pooled_shape(x, s), x.options());
  Tensor indices = empty_channels_last(out.shape(), x.options().with(DType::i64));
  if (out.numel() > 0)
    kernels::cuda::max_pool2d_channels_last(in.dtype(), s, channels, in.data_ptr(), out.data_ptr(),
                                            indices.data<int64_t>(), stream_of(in));
  const Tensor saved_indices = save(indices);
  const Shape in_shape = x.shape();
  record("max_pool2d", {x}, {&out}, [=](const std::vector<Tensor>& g) {
    const Tensor gy = to_channels_last(g[0]);
    Tensor gx = empty_channels_last(in_shape, gy.options());  // the kernel writes every element
    if (gx.numel() > 0)
      kernels::cuda::max_pool2d_channels_last_backward(gy.dtype(), s, channels, gy.data_ptr(),
                                                       saved_indices.data<int64_t>(), gx.data_ptr(),
                                                       stream_of(gy));
    return std::vector<Tensor>{gx};
  });
  return {out, indices};
}

Tensor adaptive_avg_pool2d_channels_last(const Tensor& x, kernels::Pool2dShape s) {
  require_cuda_channels_last(x, "adaptive_avg_pool2d");
  s = per_image(s, x);
  const int64_t channels = x.size(1);
  const Tensor in = to_channels_last(x.detach());
  Tensor out = empty_channels_last(pooled_shape(x, s), x.options());
  if (out.numel() > 0)
    kernels::cuda::adaptive_avg_pool2d_channels_last(in.dtype(), s, channels, in.data_ptr(),
                                                     out.data_ptr(), stream_of(in));
  const Shape in_shape = x.shape();
  record("adaptive_avg_pool2d", {x}, {&out}, [=](const std::vector<Tensor>& g) {
    const Tensor gy = to_channels_last(g[0]);
    Tensor gx = empty_channels_last(in_shape, gy.options());  // the kernel writes every element
    if (gx.numel() > 0)
      kernels::cuda::adaptive_avg_pool2d_channels_last_backward(
          gy.dtype(), s, channels, gy.data_ptr(), gx.data_ptr(), stream_of(gy));
    return std::vector<Tensor>{gx};
  });
  return out;
}

}  // namespace sonata
#endif  // SONATA_WITH_CUDA

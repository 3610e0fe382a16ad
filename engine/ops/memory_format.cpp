#include "engine/ops/memory_format.h"

#include "base/error.h"
#include "engine/autograd/grad_mode.h"

namespace sonata {

bool is_channels_last(const Tensor& x) {
  if (!x.defined() || x.dim() != 4) return false;
  const Shape& shape = x.shape();
  const Shape& strides = x.strides();
  // Innermost to outermost in memory: C, W, H, N.
  int64_t expected = 1;
  for (int d : {1, 3, 2, 0}) {
    if (shape[size_t(d)] != 1 && strides[size_t(d)] != expected) return false;
    expected *= shape[size_t(d)];
  }
  return true;
}

bool prefers_channels_last(const Tensor& x) {
  if (!is_channels_last(x)) return false;
  if (!x.is_contiguous()) return true;
  const Shape& shape = x.shape();
  return shape[1] == 1 && x.strides()[1] == 1 && shape[2] * shape[3] > 1;
}

Tensor to_channels_last(const Tensor& x) {
  SONATA_CHECK(x.defined() && x.dim() == 4,
               "to_channels_last: expected a 4-D [N, C, H, W] tensor, got ",
               x.defined() ? shape_str(x.shape()) : std::string("an undefined tensor"));
  if (prefers_channels_last(x)) return x;
  const Shape& shape = x.shape();
  // The view canonicalises the strides of a one-channel NHWC (contiguous() alone would
  // leave them as NCHW's, and the layout would be lost).
  return x.permute({0, 2, 3, 1})
      .contiguous()
      .view({shape[0], shape[2], shape[3], shape[1]})
      .permute({0, 3, 1, 2});
}

Tensor to_contiguous_nchw(const Tensor& x) {
  if (!prefers_channels_last(x) || !x.is_contiguous()) return x.contiguous();
  return x.view(x.shape());
}

Tensor empty_channels_last(const Shape& nchw, const TensorOptions& options) {
  SONATA_CHECK(nchw.size() == 4, "empty_channels_last: expected an NCHW shape, got ",
               shape_str(nchw));
  NoGradGuard no_grad;
  return empty({nchw[0], nchw[2], nchw[3], nchw[1]}, options).permute({0, 3, 1, 2});
}

}  // namespace sonata

#include "base/error.h"
#include "engine/autograd/grad_mode.h"
#include "engine/autograd/record.h"
#include "engine/ops.h"
#include "engine/ops/op_utils.h"

namespace sonata {

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim) {
  SONATA_CHECK(!tensors.empty(), "cat: no tensors to join");
  check_same_device("cat", tensors);
  const Tensor& first = tensors[0];
  dim = wrap_dim(dim, first.dim(), "cat");
  Shape shape = first.shape();
  std::vector<int64_t> sizes;
  shape[dim] = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    SONATA_CHECK(t.dtype() == first.dtype(), "cat: tensor ", i, " is ", dtype_name(t.dtype()),
                 ", tensor 0 is ", dtype_name(first.dtype()));
    SONATA_CHECK(t.dim() == first.dim(), "cat: tensor ", i, " has ", t.dim(),
                 " dims, tensor 0 has ", first.dim());
    for (int64_t d = 0; d < t.dim(); ++d)
      SONATA_CHECK(d == dim || t.shape()[d] == first.shape()[d], "cat: tensor ", i, " of shape ",
                   shape_str(t.shape()), " does not match tensor 0 of shape ",
                   shape_str(first.shape()), " outside dim ", dim);
    sizes.push_back(t.shape()[dim]);
    shape[dim] += t.shape()[dim];
  }
  Tensor out = empty(shape, first.options());
  {
    NoGradGuard no_grad;
    int64_t at = 0;
    for (size_t i = 0; i < tensors.size(); ++i) {
      out.slice(dim, at, at + sizes[i]).copy_(tensors[i]);
      at += sizes[i];
    }
  }
  record("cat", tensors, {&out},
         [=](const std::vector<Tensor>& g) { return split(g[0], sizes, dim); });
  return out;
}

Tensor stack(const std::vector<Tensor>& tensors, int64_t dim) {
  SONATA_CHECK(!tensors.empty(), "stack: no tensors to join");
  dim = wrap_dim(dim, tensors[0].dim() + 1, "stack");
  std::vector<Tensor> expanded;
  expanded.reserve(tensors.size());
  for (const Tensor& t : tensors) {
    SONATA_CHECK(t.shape() == tensors[0].shape(), "stack: shapes ", shape_str(t.shape()), " and ",
                 shape_str(tensors[0].shape()), " differ");
    expanded.push_back(t.unsqueeze(dim));
  }
  return cat(expanded, dim);
}

std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int64_t dim) {
  dim = wrap_dim(dim, x.dim(), "split");
  int64_t total = 0;
  for (int64_t s : sizes) {
    SONATA_CHECK(s >= 0, "split: negative size ", s);
    total += s;
  }
  SONATA_CHECK(total == x.shape()[dim], "split: sizes sum to ", total, " but dim ", dim, " has ",
               x.shape()[dim]);
  // Plain views, then one node for all of them: a gradient for every piece is put back in a
  // single cat rather than one zero-filled copy per piece.
  std::vector<Tensor> pieces;
  std::vector<Tensor*> outputs;
  {
    NoGradGuard no_grad;
    int64_t at = 0;
    for (int64_t s : sizes) {
      pieces.push_back(x.detach().slice(dim, at, at + s));
      at += s;
    }
  }
  for (Tensor& piece : pieces) outputs.push_back(&piece);
  const Shape in_shape = x.shape();
  record("split", {x}, outputs, [=](const std::vector<Tensor>& g) {
    TensorOptions options;
    for (const Tensor& piece_grad : g)
      if (piece_grad.defined()) options = piece_grad.options();
    std::vector<Tensor> parts;
    for (size_t i = 0; i < sizes.size(); ++i) {
      Shape piece_shape = in_shape;
      piece_shape[dim] = sizes[i];
      parts.push_back(g[i].defined() ? g[i] : zeros(piece_shape, options));
    }
    return std::vector<Tensor>{cat(parts, dim)};
  });
  return pieces;
}

std::vector<Tensor> split(const Tensor& x, int64_t split_size, int64_t dim) {
  SONATA_CHECK(split_size > 0, "split: split_size must be positive, got ", split_size);
  dim = wrap_dim(dim, x.dim(), "split");
  std::vector<int64_t> sizes;
  for (int64_t at = 0; at < x.shape()[dim]; at += split_size)
    sizes.push_back(std::min(split_size, x.shape()[dim] - at));
  return split(x, sizes, dim);
}

}  // namespace sonata

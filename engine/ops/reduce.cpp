#include <numeric>

#include "base/error.h"
#include "engine/autograd/grad_mode.h"
#include "engine/autograd/record.h"
#include "engine/ops.h"
#include "engine/ops/backend.h"
#include "engine/ops/op_utils.h"

namespace sonata {
namespace {

using kernels::ReduceOp;

// The input as a contiguous [outer, n, inner] block whose middle axis holds exactly the
// reduced dims: directly when they are adjacent, else after moving them last.
struct ReduceBlock {
  Tensor input;
  int64_t outer = 1, n = 1, inner = 1;
};

ReduceBlock reduce_block(const Tensor& x, const std::vector<int64_t>& dims) {
  NoGradGuard no_grad;
  ReduceBlock block;
  const bool adjacent = dims.back() - dims.front() + 1 == int64_t(dims.size());
  if (adjacent) {
    block.input = x.contiguous();
    for (int64_t d = 0; d < x.dim(); ++d) {
      const int64_t s = x.shape()[d];
      (d < dims.front() ? block.outer : d > dims.back() ? block.inner : block.n) *= s;
    }
    return block;
  }
  std::vector<int64_t> order;
  for (int64_t d = 0; d < x.dim(); ++d)
    if (!std::binary_search(dims.begin(), dims.end(), d))
      order.push_back(d), block.outer *= x.shape()[d];
  for (int64_t d : dims) order.push_back(d), block.n *= x.shape()[d];
  block.input = x.permute(order).contiguous();
  return block;
}

Shape reduced_shape(const Shape& shape, const std::vector<int64_t>& dims, bool keepdim) {
  Shape out;
  for (int64_t d = 0; d < int64_t(shape.size()); ++d) {
    if (std::binary_search(dims.begin(), dims.end(), d)) {
      if (keepdim) out.push_back(1);
    } else {
      out.push_back(shape[d]);
    }
  }
  return out;
}

Tensor run_reduce(ReduceOp op, const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  const ReduceBlock block = reduce_block(x, dims);
  Tensor out = empty(reduced_shape(x.shape(), dims, keepdim), x.options());
  if (out.numel() > 0)
    SONATA_BACKEND(x.device(), reduce, op, x.dtype(), block.input.data_ptr(), out.data_ptr(),
                   block.outer, block.n, block.inner);
  return out;
}

}  // namespace

Tensor sum(const Tensor& x, const std::vector<int64_t>& dims_in, bool keepdim) {
  check_floating("sum", x);
  const std::vector<int64_t> dims = normalize_dims(dims_in, x.dim(), "sum");
  if (dims.empty()) return x.clone();  // a 0-d tensor: nothing to reduce
  Tensor out = run_reduce(ReduceOp::sum, x, dims, keepdim);
  const Shape in_shape = x.shape(), keep_shape = reduced_shape(in_shape, dims, true);
  record("sum", {x}, {&out}, [=](const std::vector<Tensor>& g) {
    return std::vector<Tensor>{g[0].reshape(keep_shape).expand(in_shape)};
  });
  return out;
}

Tensor mean(const Tensor& x, const std::vector<int64_t>& dims_in, bool keepdim) {
  const std::vector<int64_t> dims = normalize_dims(dims_in, x.dim(), "mean");
  int64_t count = 1;
  for (int64_t d : dims) count *= x.shape()[d];
  SONATA_CHECK(count > 0, "mean: the reduced dims hold no elements");
  return mul(sum(x, dims, keepdim), 1.0 / double(count));
}

Tensor var(const Tensor& x, const std::vector<int64_t>& dims_in, int64_t correction, bool keepdim) {
  const std::vector<int64_t> dims = normalize_dims(dims_in, x.dim(), "var");
  int64_t count = 1;
  for (int64_t d : dims) count *= x.shape()[d];
  SONATA_CHECK(count - correction > 0, "var: ", count, " elements are too few for correction ",
               correction);
  const Tensor centred = sub(x, mean(x, dims, true));
  return mul(sum(mul(centred, centred), dims, keepdim), 1.0 / double(count - correction));
}

Tensor amax(const Tensor& x, const std::vector<int64_t>& dims_in, bool keepdim) {
  check_floating("amax", x);
  const std::vector<int64_t> dims = normalize_dims(dims_in, x.dim(), "amax");
  if (dims.empty()) return x.clone();
  for (int64_t d : dims) SONATA_CHECK(x.shape()[d] > 0, "amax: reducing an empty dim ", d);
  Tensor out = run_reduce(ReduceOp::max, x, dims, keepdim);
  const Shape in_shape = x.shape(), keep_shape = reduced_shape(in_shape, dims, true);
  const Tensor saved_x = save(x), saved_out = save(out);
  record("amax", {x}, {&out}, [=](const std::vector<Tensor>& g) {
    const Tensor is_max = eq(saved_x, saved_out.reshape(keep_shape));
    const Tensor ties = sum(is_max.to(g[0].dtype()), dims, true);
    const Tensor share = div(g[0].reshape(keep_shape), ties);
    return std::vector<Tensor>{where(is_max, share, zeros({}, g[0].options()))};
  });
  return out;
}

std::pair<Tensor, Tensor> max(const Tensor& x, int64_t dim, bool keepdim) {
  check_floating("max", x);
  dim = wrap_dim(dim, x.dim(), "max");
  const std::vector<int64_t> dims = x.dim() == 0 ? std::vector<int64_t>{} : std::vector{dim};
  if (dims.empty()) return {x.clone(), zeros({}, x.options().with(DType::i64))};
  SONATA_CHECK(x.shape()[dim] > 0, "max: reducing an empty dim ", dim);
  const ReduceBlock block = reduce_block(x, dims);
  const Shape out_shape = reduced_shape(x.shape(), dims, keepdim);
  Tensor values = empty(out_shape, x.options());
  Tensor indices = empty(out_shape, x.options().with(DType::i64));
  SONATA_BACKEND(x.device(), max_with_index, x.dtype(), block.input.data_ptr(), values.data_ptr(),
                 indices.data<int64_t>(), block.outer, block.n, block.inner);
  const Shape in_shape = x.shape(), keep_shape = reduced_shape(in_shape, dims, true);
  const Tensor saved_indices = save(indices);
  record("max", {x}, {&values}, [=](const std::vector<Tensor>& g) {
    return std::vector<Tensor>{scatter_add(zeros(in_shape, g[0].options()), dim,
                                           saved_indices.reshape(keep_shape),
                                           g[0].reshape(keep_shape))};
  });
  return {values, indices};
}

Tensor sum_to(const Tensor& x, const Shape& shape) {
  if (x.shape() == shape) return x;
  SONATA_CHECK(x.dim() >= int64_t(shape.size()), "sum_to: cannot reduce ", shape_str(x.shape()),
               " to ", shape_str(shape));
  const int64_t lead = x.dim() - int64_t(shape.size());
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < x.dim(); ++d)
    if (d < lead || (shape[d - lead] == 1 && x.shape()[d] != 1)) dims.push_back(d);
  if (dims.empty()) return x.reshape(shape);
  return sum(x, dims, true).reshape(shape);
}

}  // namespace sonata

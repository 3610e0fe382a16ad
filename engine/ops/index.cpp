#include "base/error.h"
#include "engine/autograd/grad_mode.h"
#include "engine/autograd/record.h"
#include "engine/ops.h"
#include "engine/ops/backend.h"
#include "engine/ops/op_utils.h"

namespace sonata {
namespace {

void check_index(const char* name, const Tensor& x, const Tensor& index) {
  SONATA_CHECK(index.dtype() == DType::i64, name, ": indices must be i64, got ",
               dtype_name(index.dtype()));
  check_same_device(name, {x, index});
}

// gather / scatter_add index: same rank as x, same sizes outside `dim`.
void check_index_shape(const char* name, const Shape& x_shape, const Tensor& index, int64_t dim) {
  SONATA_CHECK(index.dim() == int64_t(x_shape.size()), name, ": index has ", index.dim(),
               " dims, the tensor has ", x_shape.size());
  for (int64_t d = 0; d < index.dim(); ++d)
    SONATA_CHECK(d == dim || index.shape()[d] == x_shape[d], name, ": index shape ",
                 shape_str(index.shape()), " must match ", shape_str(x_shape), " outside dim ",
                 dim);
}

}  // namespace

Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index) {
  check_index("index_select", x, index);
  SONATA_CHECK(index.dim() == 1, "index_select: index must be 1-D, got ", shape_str(index.shape()));
  dim = wrap_dim(dim, x.dim(), "index_select");
  const Tensor in = x.contiguous(), idx = index.contiguous();
  const AxisSplit axis = split_axis(in.shape(), dim);
  Shape shape = x.shape();
  shape[dim] = idx.numel();
  Tensor out = empty(shape, x.options());
  if (out.numel() > 0)
    SONATA_BACKEND(x.device(), index_select, x.dtype(), in.data_ptr(), idx.data<int64_t>(),
                   out.data_ptr(), axis.outer, axis.n, axis.inner, idx.numel());
  const Tensor saved_index = save(idx);
  const Shape in_shape = x.shape();
  record("index_select", {x}, {&out}, [=](const std::vector<Tensor>& g) {
    const Tensor gy = g[0].contiguous();
    Tensor gx = zeros(in_shape, gy.options());
    if (gy.numel() > 0)
      SONATA_BACKEND(gy.device(), index_add, gy.dtype(), gy.data_ptr(), saved_index.data<int64_t>(),
                     gx.data_ptr(), axis.outer, axis.n, axis.inner, saved_index.numel());
    return std::vector<Tensor>{gx};
  });
  return out;
}

Tensor gather(const Tensor& x, int64_t dim, const Tensor& index) {
  check_index("gather", x, index);
  dim = wrap_dim(dim, x.dim(), "gather");
  check_index_shape("gather", x.shape(), index, dim);
  const Tensor in = x.contiguous(), idx = index.contiguous();
  const AxisSplit axis = split_axis(in.shape(), dim);
  Tensor out = empty(idx.shape(), x.options());
  if (out.numel() > 0)
    SONATA_BACKEND(x.device(), gather, x.dtype(), in.data_ptr(), idx.data<int64_t>(),
                   out.data_ptr(), axis.outer, axis.n, axis.inner, idx.shape()[dim]);
  const Tensor saved_index = save(idx);
  const Shape in_shape = x.shape();
  record("gather", {x}, {&out}, [=](const std::vector<Tensor>& g) {
    return std::vector<Tensor>{
        scatter_add(zeros(in_shape, g[0].options()), dim, saved_index, g[0])};
  });
  return out;
}

Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  check_index("scatter_add", x, index);
  check_same_device("scatter_add", {x, src});
  SONATA_CHECK(x.dtype() == src.dtype(), "scatter_add: src is ", dtype_name(src.dtype()),
               ", the tensor is ", dtype_name(x.dtype()));
  dim = wrap_dim(dim, x.dim(), "scatter_add");
  check_index_shape("scatter_add", x.shape(), index, dim);
  SONATA_CHECK(src.shape() == index.shape(), "scatter_add: src shape ", shape_str(src.shape()),
               " must equal the index shape ", shape_str(index.shape()));
  Tensor out = x.detach().clone();
  const Tensor idx = index.contiguous(), values = src.contiguous();
  const AxisSplit axis = split_axis(out.shape(), dim);
  if (values.numel() > 0)
    SONATA_BACKEND(x.device(), scatter_add, x.dtype(), values.data_ptr(), idx.data<int64_t>(),
                   out.data_ptr(), axis.outer, axis.n, axis.inner, idx.shape()[dim]);
  const Tensor saved_index = save(idx);
  record("scatter_add", {x, src}, {&out}, [=](const std::vector<Tensor>& g) {
    return std::vector<Tensor>{g[0], gather(g[0], dim, saved_index)};
  });
  return out;
}

}  // namespace sonata

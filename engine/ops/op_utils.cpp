#include "engine/ops/op_utils.h"

#include <algorithm>

#include "base/error.h"

namespace sonata {

int64_t wrap_dim(int64_t dim, int64_t ndim, std::string_view op) {
  const int64_t bound = std::max<int64_t>(ndim, 1);
  if (dim < -bound || dim >= bound)
    throw Error(str(op, ": dim ", dim, " is out of range for a tensor of ", ndim, " dims"));
  return dim < 0 ? dim + bound : dim;
}

Shape broadcast_shapes(const Shape& a, const Shape& b, std::string_view op) {
  const size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t sa = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t sb = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (sa != sb && sa != 1 && sb != 1)
      throw Error(str(op, ": shapes ", shape_str(a), " and ", shape_str(b),
                      " cannot be broadcast together"));
    out[i] = sa == 1 ? sb : sa;
  }
  return out;
}

Shape broadcast_strides(const Tensor& t, const Shape& shape) {
  const size_t lead = shape.size() - t.shape().size();
  Shape strides(shape.size(), 0);
  for (size_t i = 0; i < t.shape().size(); ++i)
    strides[lead + i] = t.shape()[i] == 1 ? 0 : t.strides()[i];
  return strides;
}

kernels::StridedLayout make_layout(const Shape& shape, const std::vector<Shape>& operand_strides) {
  SONATA_CHECK(operand_strides.size() <= size_t(kernels::kMaxOperands), "too many operands");
  // Drop size-1 dims, then merge dim d into d+1 when every operand steps contiguously.
  std::vector<int64_t> sizes;
  std::vector<std::vector<int64_t>> strides(operand_strides.size());
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    if (!sizes.empty()) {
      bool mergeable = true;
      for (size_t op = 0; op < operand_strides.size(); ++op)
        mergeable = mergeable && strides[op].back() == operand_strides[op][d] * shape[d];
      if (mergeable) {
        sizes.back() *= shape[d];
        for (size_t op = 0; op < operand_strides.size(); ++op)
          strides[op].back() = operand_strides[op][d];
        continue;
      }
    }
    sizes.push_back(shape[d]);
    for (size_t op = 0; op < operand_strides.size(); ++op)
      strides[op].push_back(operand_strides[op][d]);
  }
  SONATA_CHECK(sizes.size() <= size_t(kernels::kMaxDims), "tensors of more than ",
               kernels::kMaxDims, " non-mergeable dims are not supported");
  kernels::StridedLayout layout;
  layout.ndim = int(sizes.size());
  for (size_t d = 0; d < sizes.size(); ++d) {
    layout.sizes[d] = sizes[d];
    for (size_t op = 0; op < operand_strides.size(); ++op) layout.strides[op][d] = strides[op][d];
  }
  return layout;
}

AxisSplit split_axis(const Shape& shape, int64_t dim) {
  AxisSplit axis;
  for (int64_t d = 0; d < int64_t(shape.size()); ++d)
    (d < dim ? axis.outer : d > dim ? axis.inner : axis.n) *= shape[d];
  return axis;
}

void check_same_device(std::string_view op, const std::vector<Tensor>& tensors) {
  for (const Tensor& t : tensors) {
    SONATA_CHECK(t.defined(), op, ": an input tensor is undefined");
    if (t.device() != tensors[0].device())
      throw Error(str(op, ": inputs are on different devices (", tensors[0].device().str(), " and ",
                      t.device().str(), ")"));
  }
}

void check_floating(std::string_view op, const Tensor& t) {
  if (!is_floating(t.dtype()))
    throw Error(str(op, ": expected a floating-point tensor, got ", dtype_name(t.dtype())));
}

void check_step_lengths(std::string_view op, const Tensor& lengths, int64_t batch,
                        const Tensor& like) {
  if (!lengths.defined()) return;
  SONATA_CHECK(lengths.dtype() == DType::i64 && lengths.shape() == Shape{batch}, op,
               ": lengths must be i64 [", batch, "], got ", dtype_name(lengths.dtype()), " ",
               shape_str(lengths.shape()));
  SONATA_CHECK(lengths.device() == like.device(), op, ": lengths are on ", lengths.device().str(),
               ", the gates on ", like.device().str());
}

const int64_t* step_lengths_data(const Tensor& lengths) {
  return lengths.defined() ? lengths.data<int64_t>() : nullptr;
}

std::vector<int64_t> normalize_dims(const std::vector<int64_t>& dims, int64_t ndim,
                                    std::string_view op) {
  std::vector<int64_t> out;
  if (dims.empty()) {
    for (int64_t d = 0; d < ndim; ++d) out.push_back(d);
    return out;
  }
  for (int64_t d : dims) out.push_back(wrap_dim(d, ndim, op));
  std::sort(out.begin(), out.end());
  if (std::adjacent_find(out.begin(), out.end()) != out.end())
    throw Error(str(op, ": a dim appears twice in the list of dims"));
  return out;
}

}  // namespace sonata

#pragma once
// Shape arithmetic shared by the ops.
#include <string_view>
#include <vector>

#include "engine/tensor.h"
#include "kernels/common/layout.h"

namespace sonata {

int64_t wrap_dim(int64_t dim, int64_t ndim, std::string_view op);
Shape broadcast_shapes(const Shape& a, const Shape& b, std::string_view op);
// Strides that walk `t` as if it were expanded to `shape` (0 along broadcast dims).
Shape broadcast_strides(const Tensor& t, const Shape& shape);
// A kernel layout over `shape` for operands with the given strides, with dimensions merged
// where every operand allows it (so contiguous operands come out 1-D).
kernels::StridedLayout make_layout(const Shape& shape, const std::vector<Shape>& operand_strides);
// A contiguous tensor seen as [outer, n, inner] around `dim`.
struct AxisSplit {
  int64_t outer = 1, n = 1, inner = 1;
};
AxisSplit split_axis(const Shape& shape, int64_t dim);

void check_same_device(std::string_view op, const std::vector<Tensor>& tensors);
void check_floating(std::string_view op, const Tensor& t);
// Recurrent ops' per-sample lengths: undefined, or i64 [batch] on `like`'s device.
void check_step_lengths(std::string_view op, const Tensor& lengths, int64_t batch,
                        const Tensor& like);
// The lengths' data for a kernel, null when undefined (every sample active).
const int64_t* step_lengths_data(const Tensor& lengths);
// Empty `dims` means all; negative dims wrap; duplicates are an error. Sorted.
std::vector<int64_t> normalize_dims(const std::vector<int64_t>& dims, int64_t ndim,
                                    std::string_view op);

}  // namespace sonata

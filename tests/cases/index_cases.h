#pragma once
// The index ops' cases, written once: the CPU value checks (against loops by the definition),
// the CPU float64 gradient checks (tests/ops/test_index.cpp) and the CUDA parity checks
// (tests/cuda/test_cuda_shape_index.cpp) all iterate these tables. index_add is
// index_select's backward, checked with it; its fp32 accumulation and bit-exact
// deterministic path on CUDA, and the literal and error cases, stay by name.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/tensor.h"

namespace sonata::testing {

// index_select(x, dim, index) with index [K], x transposed first where `transposed`.
struct IndexSelectCase {
  std::string name;
  Shape x;  // the input's shape before the transpose
  int64_t dim;
  std::vector<int64_t> index;
  bool transposed = false;  // index a non-contiguous x.t() (x 2-D)

  Tensor index_tensor(Device device = Device::cpu()) const;
  Tensor input_of(const Tensor& x) const { return transposed ? x.t() : x; }
};

// Repeated indices along the first, a middle and the last dim; many repeats of few rows
// (CUDA: the backward's atomic adds collide).
const std::vector<IndexSelectCase>& index_select_cases();

// gather(x, dim, index), and scatter_add(x, dim, index, src) with src shaped like index.
struct GatherCase {
  std::string name;
  Shape x;  // before the transpose
  int64_t dim;
  std::vector<int64_t> index;
  Shape index_shape;
  bool transposed = false;  // gather from x.t()

  Tensor index_tensor(Device device = Device::cpu()) const;
  Tensor input_of(const Tensor& x) const { return transposed ? x.t() : x; }
};

// Repeated indices, fewer rows than the input, a transposed input, dims counted from the end.
const std::vector<GatherCase>& gather_cases();

struct ScatterAddCase {
  std::string name;
  Shape x;
  Shape src;  // before the transpose
  int64_t dim;
  std::vector<int64_t> index;
  Shape index_shape;
  bool transposed_src = false;  // add a non-contiguous src.t()

  Tensor index_tensor(Device device = Device::cpu()) const;
  Tensor src_of(const Tensor& src) const { return transposed_src ? src.t() : src; }
};

// Colliding indices, the last dim with a non-contiguous source, and four sources per target
// across a row (CUDA: colliding atomics).
const std::vector<ScatterAddCase>& scatter_add_cases();

}  // namespace sonata::testing

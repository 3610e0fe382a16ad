#pragma once
// How an elementwise kernel walks its operands: the output's shape and, per operand, the
// element strides (0 along broadcast dimensions). The engine coalesces dimensions first,
// so most launches see ndim 1 and take the contiguous fast path.
#include <cstdint>

#include "base/hd.h"

namespace sonata::kernels {

inline constexpr int kMaxDims = 8;
inline constexpr int kMaxOperands = 4;

struct StridedLayout {
  int ndim = 0;
  int64_t sizes[kMaxDims] = {};
  int64_t strides[kMaxOperands][kMaxDims] = {};

  SONATA_HD int64_t numel() const {
    int64_t n = 1;
    for (int d = 0; d < ndim; ++d) n *= sizes[d];
    return n;
  }
  // Element offset of operand `op` for the linear output index `linear`.
  SONATA_HD int64_t offset(int op, int64_t linear) const {
    int64_t at = 0;
    for (int d = ndim - 1; d >= 0; --d) {
      const int64_t i = linear % sizes[d];
      linear /= sizes[d];
      at += i * strides[op][d];
    }
    return at;
  }
  // True when operand `op` is walked contiguously in output order.
  SONATA_HD bool is_contiguous(int op) const {
    int64_t expected = 1;
    for (int d = ndim - 1; d >= 0; --d) {
      if (sizes[d] != 1 && strides[op][d] != expected) return false;
      expected *= sizes[d];
    }
    return true;
  }
};

}  // namespace sonata::kernels

#pragma once
// What the fuzz targets require of every tensor a reader accepts.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "engine/tensor.h"

namespace sonata::fuzz {

// Its bytes lie within the input, and a bool holds only 0 or 1 (any other byte would be
// undefined behaviour wherever the tensor is read later). Returns its size in bytes.
inline size_t check_tensor(const Tensor& t, size_t input_size) {
  const size_t bytes = size_t(t.numel()) * dtype_size(t.dtype());
  if (bytes > input_size) std::abort();
  const auto* p = static_cast<const uint8_t*>(t.data_ptr());
  if (t.dtype() == DType::boolean && std::any_of(p, p + bytes, [](uint8_t b) { return b > 1; }))
    std::abort();
  return bytes;
}

}  // namespace sonata::fuzz

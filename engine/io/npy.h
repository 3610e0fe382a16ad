#pragma once
// NumPy .npy files (format 1.0, 2.0 and 3.0; little-endian; C order), read and written by
// hand. Files are untrusted: a bad magic, a header past the end, an unparsable or unsupported
// descr, fortran_order, a shape that disagrees with the file's size: one clear sonata::Error
// naming the file, never a crash or an over-read.
#include <cstdint>
#include <string>

#include "engine/tensor.h"

namespace sonata {

Tensor load_npy(const std::string& path);
// The file memory-mapped, not read: a CPU tensor over read-only pages of the file, which
// stays mapped while any view of the tensor lives (the feature cache's clips). Writing
// through it faults; copy first. Checked as load_npy checks.
Tensor map_npy(const std::string& path);

// What a .npy header says, checked against the file's size: the data start at data_offset.
struct NpyLayout {
  DType dtype = DType::f32;
  Shape shape;
  size_t data_offset = 0;
};
NpyLayout parse_npy_layout(const uint8_t* data, size_t size, const std::string& source);
Tensor parse_npy(const uint8_t* data, size_t size, const std::string& source);
// Writes format 1.0 (2.0 when the header needs it), atomically like save_safetensors.
void save_npy(const std::string& path, const Tensor& tensor);

}  // namespace sonata

#pragma once
// A decoded 8-bit image before any conversion: gray or RGB samples, interleaved, rows top
// first. The PNG and JPEG readers (png_reader.h, jpeg_reader.h) produce it; image_file.h turns
// it into the float [C, H, W] tensor the models read.
#include <cstdint>
#include <vector>

namespace sonata {

struct Pixels {
  int64_t width = 0, height = 0;
  int64_t channels = 0;         // 1: gray, 3: RGB
  std::vector<uint8_t> values;  // height * width * channels, (y, x, channel) order
};

}  // namespace sonata

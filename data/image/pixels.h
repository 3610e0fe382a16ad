#pragma once
// A decoded 8-bit image before any conversion: gray or RGB samples, interleaved, rows top
// first. The PNG and JPEG readers (png_reader.h, jpeg_reader.h) produce it; image_file.h turns
// it into the float [C, H, W] tensor the models read.
#include <cstdint>
#include <string>
#include <vector>

namespace sonata {

// PIL's Image.MAX_IMAGE_PIXELS, int(1024 * 1024 * 1024 // 4 // 3): an image whose header
// declares more pixels is refused before anything is allocated for it, as PIL refuses a
// "decompression bomb" (a 3 KB PNG can declare 30000 x 30000, 2.7 GB of RGB samples).
constexpr int64_t kMaxImagePixels = 89478485;

// Throws naming `path` when width x height exceeds max_pixels; the readers call it with the
// header's size, before decoding.
void check_image_size(const std::string& path, int64_t width, int64_t height, int64_t max_pixels);

struct Pixels {
  int64_t width = 0, height = 0;
  int64_t channels = 0;         // 1: gray, 3: RGB
  std::vector<uint8_t> values;  // height * width * channels, (y, x, channel) order
};

}  // namespace sonata

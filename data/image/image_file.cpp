#include "data/image/image_file.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <new>

#include "base/error.h"
#include "data/image/jpeg_reader.h"
#include "data/image/png_reader.h"

namespace sonata {
namespace {

uint8_t luma(const uint8_t* rgb) {
  return uint8_t(
      (uint32_t(rgb[0]) * 19595 + uint32_t(rgb[1]) * 38470 + uint32_t(rgb[2]) * 7471 + 0x8000) >>
      16);
}

}  // namespace

bool is_image_path(const std::string& path) {
  std::string extension = std::filesystem::path(path).extension().string();
  std::transform(extension.begin(), extension.end(), extension.begin(),
                 [](unsigned char c) { return char(std::tolower(c)); });
  return extension == ".png" || extension == ".jpg" || extension == ".jpeg";
}

void check_image_size(const std::string& path, int64_t width, int64_t height, int64_t max_pixels) {
  SONATA_CHECK(width * height <= max_pixels, "the image '", path, "' declares ", width, " x ",
               height, " = ", width * height, " pixels, more than the ", max_pixels,
               " allowed (--max-image-pixels; PIL's MAX_IMAGE_PIXELS): refused before decoding");
}

Pixels read_pixels(const std::string& path, int64_t max_pixels) {
  std::ifstream in(path, std::ios::binary);
  SONATA_CHECK(in.good(), "cannot open the image '", path, "'");
  unsigned char head[4] = {};
  in.read(reinterpret_cast<char*>(head), 4);
  if (in.gcount() == 4 && head[0] == 0x89 && head[1] == 'P' && head[2] == 'N' && head[3] == 'G')
    return read_png(path, max_pixels);
  if (in.gcount() >= 3 && head[0] == 0xFF && head[1] == 0xD8 && head[2] == 0xFF)
    return read_jpeg(path, max_pixels);
  throw Error(str("the image '", path, "' is neither a PNG nor a JPEG file"));
}

Tensor pixels_to_tensor(const Pixels& pixels, int64_t channels) {
  SONATA_CHECK(channels == 1 || channels == 3, "images are read with 1 or 3 channels, not ",
               channels);
  SONATA_CHECK(pixels.channels == 1 || pixels.channels == 3, "pixels have 1 or 3 channels, not ",
               pixels.channels);
  const int64_t plane = pixels.width * pixels.height;
  Tensor image = empty({channels, pixels.height, pixels.width});
  float* out = image.data<float>();
  const uint8_t* in = pixels.values.data();
  for (int64_t i = 0; i < plane; ++i) {
    const uint8_t* pixel = in + i * pixels.channels;
    if (channels == 1) {
      out[i] = float(pixels.channels == 1 ? pixel[0] : luma(pixel)) / 255.0f;
    } else {
      for (int64_t c = 0; c < 3; ++c)
        out[c * plane + i] = float(pixel[pixels.channels == 1 ? 0 : c]) / 255.0f;
    }
  }
  return image;
}

Tensor read_image(const std::string& path, int64_t channels, int64_t max_pixels) {
  try {
    return pixels_to_tensor(read_pixels(path, max_pixels), channels);
  } catch (const std::bad_alloc&) {
    throw Error(str("out of memory reading the image '", path, "'"));
  }
}

}  // namespace sonata

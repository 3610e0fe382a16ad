#include "tests/support/image_files.h"

#include <cstdio>
#include <filesystem>
#include <memory>
#include <random>
#include <stdexcept>

#include "tests/support/audio_files.h"

#if SONATA_WITH_IMAGE
#include <jpeglib.h>
#endif

namespace sonata::testing {
namespace {

uint32_t crc32(const uint8_t* data, size_t size, uint32_t crc = 0) {
  crc = ~crc;
  for (size_t i = 0; i < size; ++i) {
    crc ^= data[i];
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

uint32_t adler32(const std::vector<uint8_t>& data) {
  uint32_t a = 1, b = 0;
  for (const uint8_t byte : data) {
    a = (a + byte) % 65521;
    b = (b + a) % 65521;
  }
  return (b << 16) | a;
}

void put32(std::vector<uint8_t>& out, uint32_t value) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(uint8_t(value >> shift));
}

void chunk(std::vector<uint8_t>& out, const char* type, const std::vector<uint8_t>& data) {
  put32(out, uint32_t(data.size()));
  std::vector<uint8_t> body(type, type + 4);
  body.insert(body.end(), data.begin(), data.end());
  out.insert(out.end(), body.begin(), body.end());
  put32(out, crc32(body.data(), body.size()));
}

// zlib stream of stored (uncompressed) deflate blocks.
std::vector<uint8_t> zlib_stored(const std::vector<uint8_t>& raw) {
  std::vector<uint8_t> out = {0x78, 0x01};
  size_t at = 0;
  do {
    const size_t size = std::min<size_t>(raw.size() - at, 65535);
    const bool last = at + size == raw.size();
    out.push_back(last ? 1 : 0);
    out.push_back(uint8_t(size));
    out.push_back(uint8_t(size >> 8));
    out.push_back(uint8_t(~size));
    out.push_back(uint8_t(~size >> 8));
    out.insert(out.end(), raw.begin() + long(at), raw.begin() + long(at + size));
    at += size;
  } while (at < raw.size());
  put32(out, adler32(raw));
  return out;
}

int channels_of(PngColor color) {
  switch (color) {
    case PngColor::gray:
      return 1;
    case PngColor::rgb:
      return 3;
    case PngColor::gray_alpha:
      return 2;
    case PngColor::rgba:
      return 4;
  }
  return 0;
}

}  // namespace

std::vector<uint8_t> png_bytes(int64_t width, int64_t height, PngColor color, int bit_depth,
                               const std::vector<uint16_t>& samples) {
  const int64_t per_row = width * channels_of(color);
  if (int64_t(samples.size()) != per_row * height || (bit_depth != 8 && bit_depth != 16))
    throw std::invalid_argument("png_bytes: samples do not fit the size, or a bad bit depth");
  std::vector<uint8_t> raw;
  for (int64_t y = 0; y < height; ++y) {
    raw.push_back(0);  // filter: none
    for (int64_t i = 0; i < per_row; ++i) {
      const uint16_t value = samples[size_t(y * per_row + i)];
      if (bit_depth == 16) raw.push_back(uint8_t(value >> 8));
      raw.push_back(uint8_t(value));
    }
  }
  std::vector<uint8_t> out = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  std::vector<uint8_t> header;
  put32(header, uint32_t(width));
  put32(header, uint32_t(height));
  header.insert(header.end(), {uint8_t(bit_depth), uint8_t(color), 0, 0, 0});
  chunk(out, "IHDR", header);
  chunk(out, "IDAT", zlib_stored(raw));
  chunk(out, "IEND", {});
  return out;
}

std::vector<uint8_t> palette_png_bytes(int64_t width, int64_t height,
                                       const std::vector<uint8_t>& palette,
                                       const std::vector<uint8_t>& indices,
                                       const std::vector<uint8_t>& alphas) {
  if (int64_t(indices.size()) != width * height || palette.size() % 3 != 0)
    throw std::invalid_argument("palette_png_bytes: indices do not fit the size");
  std::vector<uint8_t> raw;
  for (int64_t y = 0; y < height; ++y) {
    raw.push_back(0);  // filter: none
    raw.insert(raw.end(), indices.begin() + long(y * width),
               indices.begin() + long((y + 1) * width));
  }
  std::vector<uint8_t> out = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  std::vector<uint8_t> header;
  put32(header, uint32_t(width));
  put32(header, uint32_t(height));
  header.insert(header.end(), {8, 3, 0, 0, 0});  // 8-bit, palette
  chunk(out, "IHDR", header);
  chunk(out, "PLTE", palette);
  if (!alphas.empty()) chunk(out, "tRNS", alphas);
  chunk(out, "IDAT", zlib_stored(raw));
  chunk(out, "IEND", {});
  return out;
}

#if SONATA_WITH_IMAGE
void write_jpeg(const std::string& path, const Pixels& pixels, int quality) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "wb"), std::fclose);
  if (!file) throw std::runtime_error("write_jpeg: cannot create " + path);
  jpeg_compress_struct info;
  jpeg_error_mgr errors;
  info.err = jpeg_std_error(&errors);  // a test helper: libjpeg's default exit on error
  jpeg_create_compress(&info);
  jpeg_stdio_dest(&info, file.get());
  info.image_width = JDIMENSION(pixels.width);
  info.image_height = JDIMENSION(pixels.height);
  info.input_components = int(pixels.channels);
  info.in_color_space = pixels.channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_set_defaults(&info);
  jpeg_set_quality(&info, quality, TRUE);
  for (int c = 0; c < info.num_components; ++c) {
    info.comp_info[c].h_samp_factor = 1;
    info.comp_info[c].v_samp_factor = 1;
  }
  jpeg_start_compress(&info, TRUE);
  while (info.next_scanline < info.image_height) {
    JSAMPROW row = const_cast<uint8_t*>(pixels.values.data()) +
                   int64_t(info.next_scanline) * pixels.width * pixels.channels;
    jpeg_write_scanlines(&info, &row, 1);
  }
  jpeg_finish_compress(&info);
  jpeg_destroy_compress(&info);
}
#else
void write_jpeg(const std::string&, const Pixels&, int) {
  throw std::runtime_error("write_jpeg: built without libjpeg");
}
#endif

std::string write_two_class_images(const std::string& root, int count, int64_t width,
                                   int64_t height) {
  std::mt19937 random(7);
  std::uniform_int_distribution<int> jitter(-20, 20);
  for (const auto& [label, level] : {std::pair<const char*, int>{"dark", 40}, {"light", 215}}) {
    std::filesystem::create_directories(std::filesystem::path(root) / label);
    for (int i = 0; i < count; ++i) {
      std::vector<uint16_t> samples;
      for (int64_t k = 0; k < width * height; ++k)
        samples.push_back(uint16_t(level + jitter(random)));
      write_bytes((std::filesystem::path(root) / label / (std::to_string(i) + ".png")).string(),
                  png_bytes(width, height, PngColor::gray, 8, samples));
    }
  }
  return root;
}

}  // namespace sonata::testing

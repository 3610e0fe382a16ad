#pragma once
// Image files for tests that read them: PNGs built byte by byte here (stored deflate blocks,
// CRC-32 and Adler-32 by hand, no libpng involved, so the reader is checked against the
// samples written), and JPEGs written with libjpeg (lossy: readers compare within a
// tolerance).
#include <cstdint>
#include <string>
#include <vector>

#include "data/image/pixels.h"

namespace sonata::testing {

// PNG color types as the format numbers them.
enum class PngColor : uint8_t { gray = 0, rgb = 2, gray_alpha = 4, rgba = 6 };

// A non-interlaced PNG of `samples` (row-major, interleaved channels of the color type; values
// below 2^bit_depth), bit depth 8 or 16.
std::vector<uint8_t> png_bytes(int64_t width, int64_t height, PngColor color, int bit_depth,
                               const std::vector<uint16_t>& samples);

// A non-interlaced 8-bit palette PNG: `palette` RGB triples, one index per pixel, and a tRNS
// chunk of `alphas` (one per palette entry, none when empty).
std::vector<uint8_t> palette_png_bytes(int64_t width, int64_t height,
                                       const std::vector<uint8_t>& palette,
                                       const std::vector<uint8_t>& indices,
                                       const std::vector<uint8_t>& alphas);

// A baseline JPEG of gray or RGB `pixels` at `quality`, chroma not subsampled (4:4:4), so the
// decode error stays small for smooth images. Throws without libjpeg (SONATA_WITH_IMAGE).
void write_jpeg(const std::string& path, const Pixels& pixels, int quality);

// `count` w x h PNG images per class in root/<class>/ for two classes: "dark" (gray levels
// near 40) and "light" (near 215), a seeded pattern of +-20 on top; returns root.
std::string write_two_class_images(const std::string& root, int count, int64_t width,
                                   int64_t height);

}  // namespace sonata::testing

#pragma once
// PNG files to 8-bit gray or RGB pixels through libpng, the samples PIL's Image.open gives
// before any convert(): palettes expand to RGB, gray of 1, 2 or 4 bits scales to 8 (x 255,
// 85, 17), an alpha channel or a tRNS transparency is dropped (convert("RGB") and
// convert("L") drop it too), interlaced files are deinterlaced. 16-bit samples keep their
// high byte, as PIL reads 16-bit RGB; PIL opens 16-bit gray as mode I and its convert("L")
// clips instead of scaling, so 16-bit gray PNGs differ from PIL there.
//
// Throws sonata::Error naming the file: unreadable, not a PNG, corrupt (libpng's reason), or
// declaring more than `max_pixels` pixels (found in the header, before decoding; pixels.h).
// In a build without libpng every call throws saying so.
#include <string>

#include "data/image/pixels.h"

namespace sonata {

Pixels read_png(const std::string& path, int64_t max_pixels = kMaxImagePixels);

}  // namespace sonata

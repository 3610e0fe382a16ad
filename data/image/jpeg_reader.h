#pragma once
// JPEG files to 8-bit gray or RGB pixels through libjpeg(-turbo), with libjpeg's default
// decoding settings (accurate integer IDCT, fancy upsampling of subsampled chroma): the
// settings PIL uses, so with the same libjpeg-turbo the pixels equal PIL's bit for bit.
// Grayscale JPEGs stay gray; YCbCr (and RGB) JPEGs become RGB. CMYK / YCCK JPEGs are refused.
//
// Throws sonata::Error naming the file: unreadable, not a JPEG, corrupt, or truncated (libjpeg
// only warns at a premature end and fills the rest with gray; that is taken as corrupt, as PIL
// refuses truncated files), or declaring more than `max_pixels` pixels (found in the header,
// before decoding; pixels.h). In a build without libjpeg every call throws saying so.
#include <string>

#include "data/image/pixels.h"

namespace sonata {

Pixels read_jpeg(const std::string& path, int64_t max_pixels = kMaxImagePixels);

}  // namespace sonata

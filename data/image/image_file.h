#pragma once
// Image files as the classification task reads them: a PNG or JPEG (recognised from its first
// bytes; png_reader.h, jpeg_reader.h) to a float32 [channels, height, width] CPU tensor in
// [0, 1], the way torchvision's pipeline Image.open(path).convert(mode) -> ToTensor() does it:
//   channels 1: PIL's convert("L"), ITU-R 601-2 luma in PIL's fixed point,
//               L = (19595 R + 38470 G + 7471 B + 32768) >> 16;
//   channels 3: PIL's convert("RGB"), a gray image copied to the three channels;
// then each 8-bit value v becomes v / 255 (in float, as ToTensor).
//
// Errors throw sonata::Error, one sentence naming the file (see the readers), so a caller's
// bad-input policy can catch them per item: an image declaring more than `max_pixels` pixels
// is refused from its header (pixels.h, PIL's MAX_IMAGE_PIXELS), and running out of memory
// while reading one is an error naming it too.
#include <cstdint>
#include <string>

#include "data/image/pixels.h"
#include "engine/tensor.h"

namespace sonata {

// Whether `path` names an image by its extension, case-insensitively: .png, .jpg, .jpeg.
bool is_image_path(const std::string& path);

// The pixels of a PNG or JPEG file, by its content.
Pixels read_pixels(const std::string& path, int64_t max_pixels = kMaxImagePixels);

// `pixels` as [channels, height, width] f32 in [0, 1]; channels 1 or 3.
Tensor pixels_to_tensor(const Pixels& pixels, int64_t channels);

// read_pixels then pixels_to_tensor.
Tensor read_image(const std::string& path, int64_t channels, int64_t max_pixels = kMaxImagePixels);

}  // namespace sonata

#include "data/image/png_reader.h"

#include <cstdio>
#include <memory>
#include <new>

#include "base/error.h"

#if SONATA_WITH_IMAGE
#include <png.h>

#include <csetjmp>
#endif

namespace sonata {

#if SONATA_WITH_IMAGE
namespace {

struct CloseFile {
  void operator()(std::FILE* file) const { std::fclose(file); }
};

// libpng reports errors by calling back; the callback longjmps to the reader (a C++ exception
// must not unwind through libpng's C frames).
struct PngFailure {
  std::jmp_buf jump;
  char message[256] = {};
};

[[noreturn]] void on_png_error(png_structp png, png_const_charp message) {
  auto* failure = static_cast<PngFailure*>(png_get_error_ptr(png));
  std::snprintf(failure->message, sizeof failure->message, "%s", message);
  std::longjmp(failure->jump, 1);
}

void on_png_warning(png_structp, png_const_charp) {}  // ancillary-chunk trouble: keep reading

// Every object with a destructor lives in the caller, so a longjmp out of libpng skips none.
// An image of more than `max_pixels` leaves its size in `out` and `too_large` set, before
// anything is allocated for its samples.
bool decode(std::FILE* file, PngFailure& failure, Pixels& out, std::vector<png_bytep>& rows,
            int64_t max_pixels, bool& too_large) {
  png_structp png =
      png_create_read_struct(PNG_LIBPNG_VER_STRING, &failure, on_png_error, on_png_warning);
  if (png == nullptr) {
    std::snprintf(failure.message, sizeof failure.message, "libpng could not start");
    return false;
  }
  png_infop info = png_create_info_struct(png);
  if (info == nullptr || setjmp(failure.jump)) {
    png_destroy_read_struct(&png, &info, nullptr);
    return false;
  }
  png_init_io(png, file);
  png_read_info(png, info);
  out.width = png_get_image_width(png, info);
  out.height = png_get_image_height(png, info);
  too_large = out.width * out.height > max_pixels;
  if (too_large) {
    png_destroy_read_struct(&png, &info, nullptr);
    return false;
  }
  const int color = png_get_color_type(png, info);
  const int depth = png_get_bit_depth(png, info);
  if (color == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if (color == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(png);
  if (depth == 16) png_set_strip_16(png);
  // Expanding a palette also turns a tRNS chunk into alpha, which is dropped with the rest.
  if ((color & PNG_COLOR_MASK_ALPHA) || png_get_valid(png, info, PNG_INFO_tRNS))
    png_set_strip_alpha(png);
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  out.width = png_get_image_width(png, info);
  out.height = png_get_image_height(png, info);
  out.channels = png_get_channels(png, info);
  try {
    out.values.resize(size_t(out.width * out.height * out.channels));
    rows.resize(size_t(out.height));
  } catch (const std::bad_alloc&) {
    png_destroy_read_struct(&png, &info, nullptr);
    std::snprintf(failure.message, sizeof failure.message,
                  "out of memory for its %lld x %lld pixels", (long long)out.width,
                  (long long)out.height);
    return false;
  }
  for (int64_t y = 0; y < out.height; ++y)
    rows[size_t(y)] = out.values.data() + y * out.width * out.channels;
  png_read_image(png, rows.data());
  png_read_end(png, nullptr);
  png_destroy_read_struct(&png, &info, nullptr);
  return true;
}

}  // namespace

Pixels read_png(const std::string& path, int64_t max_pixels) {
  const std::unique_ptr<std::FILE, CloseFile> file(std::fopen(path.c_str(), "rb"));
  SONATA_CHECK(file != nullptr, "cannot open the image '", path, "'");
  png_byte signature[8] = {};
  const bool is_png =
      std::fread(signature, 1, 8, file.get()) == 8 && png_sig_cmp(signature, 0, 8) == 0;
  SONATA_CHECK(is_png, "the image '", path, "' is not a PNG file");
  std::rewind(file.get());
  PngFailure failure;
  Pixels pixels;
  std::vector<png_bytep> rows;
  bool too_large = false;
  const bool decoded = decode(file.get(), failure, pixels, rows, max_pixels, too_large);
  if (too_large) check_image_size(path, pixels.width, pixels.height, max_pixels);
  if (!decoded)
    throw Error(
        str("the image '", path, "' is a corrupt PNG file (libpng: ", failure.message, ")"));
  SONATA_CHECK(pixels.width > 0 && pixels.height > 0, "the image '", path, "' has no pixels");
  SONATA_CHECK(pixels.channels == 1 || pixels.channels == 3, "the image '", path, "' has ",
               pixels.channels, " channels after decoding, where 1 or 3 belong");
  return pixels;
}

#else

Pixels read_png(const std::string& path, int64_t) {
  throw Error(str("cannot read the image '", path,
                  "': sonata was built without libpng (SONATA_IMAGE; Debian: libpng-dev)"));
}

#endif

}  // namespace sonata

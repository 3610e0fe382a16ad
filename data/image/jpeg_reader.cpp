#include "data/image/jpeg_reader.h"

#include <cstdio>
#include <memory>
#include <new>

#include "base/error.h"

#if SONATA_WITH_IMAGE
// jpeglib.h needs FILE and size_t declared first.
#include <jerror.h>
#include <jpeglib.h>

#include <csetjmp>
#endif

namespace sonata {

#if SONATA_WITH_IMAGE
namespace {

struct CloseFile {
  void operator()(std::FILE* file) const { std::fclose(file); }
};

// libjpeg's error manager calls error_exit on a fatal error, which must not return; it longjmps
// back to the reader (a C++ exception must not unwind through libjpeg's C frames).
struct JpegFailure {
  jpeg_error_mgr manager;  // first: libjpeg hands back a pointer to it
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX] = {};
};

[[noreturn]] void on_jpeg_error(j_common_ptr info) {
  auto* failure = reinterpret_cast<JpegFailure*>(info->err);
  (*info->err->format_message)(info, failure->message);
  std::longjmp(failure->jump, 1);
}

// Level -1 is a warning about corrupt data. A premature end of the file is fatal here (the
// rest of the image would be gray); other warnings (extraneous bytes) are read past, as PIL.
void on_jpeg_message(j_common_ptr info, int level) {
  if (level == -1 && info->err->msg_code == JWRN_JPEG_EOF) on_jpeg_error(info);
}

// Every object with a destructor lives in the caller, so a longjmp out of libjpeg skips none.
// An image of more than `max_pixels` leaves its size in `out` and `too_large` set, before
// anything is allocated for its samples (libjpeg's own buffers included).
bool decode(std::FILE* file, JpegFailure& failure, Pixels& out, bool& cmyk, int64_t max_pixels,
            bool& too_large) {
  jpeg_decompress_struct info;
  info.err = jpeg_std_error(&failure.manager);
  failure.manager.error_exit = on_jpeg_error;
  failure.manager.emit_message = on_jpeg_message;
  if (setjmp(failure.jump)) {
    jpeg_destroy_decompress(&info);
    return false;
  }
  jpeg_create_decompress(&info);
  jpeg_stdio_src(&info, file);
  jpeg_read_header(&info, TRUE);
  out.width = info.image_width;
  out.height = info.image_height;
  too_large = out.width * out.height > max_pixels;
  if (too_large) {
    jpeg_destroy_decompress(&info);
    return false;
  }
  cmyk = info.jpeg_color_space == JCS_CMYK || info.jpeg_color_space == JCS_YCCK;
  if (cmyk) {
    jpeg_destroy_decompress(&info);
    return false;
  }
  info.out_color_space = info.num_components == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_start_decompress(&info);
  out.width = info.output_width;
  out.height = info.output_height;
  out.channels = info.output_components;
  try {
    out.values.resize(size_t(out.width * out.height * out.channels));
  } catch (const std::bad_alloc&) {
    jpeg_destroy_decompress(&info);
    std::snprintf(failure.message, sizeof failure.message,
                  "out of memory for its %lld x %lld pixels", (long long)out.width,
                  (long long)out.height);
    return false;
  }
  while (info.output_scanline < info.output_height) {
    JSAMPROW row = out.values.data() + int64_t(info.output_scanline) * out.width * out.channels;
    jpeg_read_scanlines(&info, &row, 1);
  }
  jpeg_finish_decompress(&info);
  jpeg_destroy_decompress(&info);
  return true;
}

}  // namespace

Pixels read_jpeg(const std::string& path, int64_t max_pixels) {
  const std::unique_ptr<std::FILE, CloseFile> file(std::fopen(path.c_str(), "rb"));
  SONATA_CHECK(file != nullptr, "cannot open the image '", path, "'");
  unsigned char marker[3] = {};
  const bool is_jpeg = std::fread(marker, 1, 3, file.get()) == 3 && marker[0] == 0xFF &&
                       marker[1] == 0xD8 && marker[2] == 0xFF;
  SONATA_CHECK(is_jpeg, "the image '", path, "' is not a JPEG file");
  std::rewind(file.get());
  JpegFailure failure;
  Pixels pixels;
  bool cmyk = false, too_large = false;
  const bool decoded = decode(file.get(), failure, pixels, cmyk, max_pixels, too_large);
  if (too_large) check_image_size(path, pixels.width, pixels.height, max_pixels);
  if (!decoded) {
    SONATA_CHECK(!cmyk, "the image '", path,
                 "' is a CMYK JPEG, which is not supported (gray or RGB)");
    throw Error(
        str("the image '", path, "' is a corrupt JPEG file (libjpeg: ", failure.message, ")"));
  }
  SONATA_CHECK(pixels.channels == 1 || pixels.channels == 3, "the image '", path, "' has ",
               pixels.channels, " channels after decoding, where 1 or 3 belong");
  return pixels;
}

#else

Pixels read_jpeg(const std::string& path, int64_t) {
  throw Error(
      str("cannot read the image '", path,
          "': sonata was built without libjpeg (SONATA_IMAGE; Debian: libjpeg62-turbo-dev)"));
}

#endif

}  // namespace sonata

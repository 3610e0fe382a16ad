// Hostile image headers: a few bytes declaring a huge image (a "decompression bomb") are
// refused from the header, naming the file, before anything is allocated for the samples
// (PIL's MAX_IMAGE_PIXELS); a load under --bad-input skip leaves such a file out instead of
// ending on std::bad_alloc; and running out of memory while loading any input is an error of
// that input, named, skipped under skip.
#include <catch2/catch.hpp>

#include <sys/resource.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <iterator>
#include <new>
#include <string>
#include <vector>

#include "base/error.h"
#include "data/datasets/image_dataset.h"
#include "data/image/image_file.h"
#include "data/manifest/class_manifest.h"
#include "data/manifest/input_policy.h"
#include "tests/support/audio_files.h"
#include "tests/support/image_files.h"

using namespace sonata;
using namespace sonata::testing;
using Catch::Contains;

namespace {

uint32_t crc32(const uint8_t* data, size_t size) {
  uint32_t crc = 0xFFFFFFFFu;
  for (size_t i = 0; i < size; ++i) {
    crc ^= data[i];
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

void put_be32(std::vector<uint8_t>& bytes, size_t at, uint32_t value) {
  for (int i = 0; i < 4; ++i) bytes[at + size_t(i)] = uint8_t(value >> (24 - 8 * i));
}

// A valid 2x2 gray PNG whose IHDR then declares width x height (its CRC redone, so libpng reads
// the header as sound): a few dozen bytes claiming a huge image.
std::vector<uint8_t> bomb_png(uint32_t width, uint32_t height) {
  std::vector<uint8_t> png = png_bytes(2, 2, PngColor::gray, 8, {10, 20, 30, 40});
  // signature (8), IHDR length (4) and type (4), then width, height, 5 bytes, the CRC.
  put_be32(png, 16, width);
  put_be32(png, 20, height);
  put_be32(png, 29, crc32(png.data() + 12, 17));
  return png;
}

// The process's resident set now, and the most it has held, in bytes.
int64_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * int64_t(sysconf(_SC_PAGESIZE));
}

int64_t peak_resident_bytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return int64_t(usage.ru_maxrss) * 1024;
}

}  // namespace

TEST_CASE("input policy: running out of memory loading an input is an error naming it",
          "[image][bad-input]") {
  const auto path_of = [](int64_t i) { return "clip_" + std::to_string(i) + ".wav"; };
  const auto load = [](int64_t i) {
    if (i == 1) throw std::bad_alloc();
    if (i == 2) throw Error("out of CPU memory allocating 32768 bytes");
  };
  // Under stop: the lowest bad input's error, a sonata::Error naming its file.
  CHECK_THROWS_WITH(load_inputs(3, 1, InputPolicy{}, path_of, load),
                    Contains("clip_1.wav") && Contains("out of memory"));
  // Under skip: both left out with their reasons, each naming its file.
  const std::vector<std::string> problems =
      load_inputs(3, 2, InputPolicy{.skip_bad = true}, path_of, load);
  CHECK(problems[0].empty());
  CHECK_THAT(problems[1], Contains("clip_1.wav") && Contains("out of memory"));
  CHECK_THAT(problems[2], Contains("clip_2.wav: out of CPU memory allocating 32768 bytes"));
}

#if SONATA_WITH_IMAGE
TEST_CASE("image: a header declaring more than --max-image-pixels is refused before decoding",
          "[image][bad-input]") {
  TemporaryFolder folder("image_bomb");
  // 900 million pixels in 70 bytes: decoding it allocated 900 MB before libpng found the data
  // missing.
  const std::string bomb = folder.file("bomb.png");
  write_bytes(bomb, bomb_png(30000, 30000));
  const int64_t resident = resident_bytes(), peak = peak_resident_bytes();
  CHECK_THROWS_WITH(read_image(bomb, 3), Contains(bomb) && Contains("30000 x 30000") &&
                                             Contains("89478485") &&
                                             Contains("refused before decoding"));
  // Nothing of the size declared was allocated: the peak did not pass what was resident
  // before by more than a few buffers (or the earlier peak, when that was higher).
  CHECK(peak_resident_bytes() <= std::max(peak, resident + (64 << 20)));

  // 10^6 x 10^6, libpng's own largest: std::bad_alloc escaped every bad-input rule.
  const std::string huge = folder.file("huge.png");
  write_bytes(huge, bomb_png(1000000, 1000000));
  CHECK_THROWS_WITH(read_image(huge, 1), Contains(huge) && Contains("1000000 x 1000000"));

  // A JPEG's frame header alike (SOF0: length, precision, height, width).
  write_jpeg(folder.file("small.jpg"), Pixels{8, 8, 1, std::vector<uint8_t>(64, 100)}, 90);
  std::ifstream in(folder.file("small.jpg"), std::ios::binary);
  std::vector<uint8_t> jpeg((std::istreambuf_iterator<char>(in)), {});
  size_t sof = 2;
  while (sof + 1 < jpeg.size() && !(jpeg[sof] == 0xFF && jpeg[sof + 1] == 0xC0)) ++sof;
  REQUIRE(sof + 9 < jpeg.size());
  for (const size_t at : {sof + 5, sof + 7}) {  // height, width: 60000
    jpeg[at] = 60000 >> 8;
    jpeg[at + 1] = 60000 & 0xFF;
  }
  const std::string jpeg_bomb = folder.file("bomb.jpg");
  write_bytes(jpeg_bomb, jpeg);
  CHECK_THROWS_WITH(read_image(jpeg_bomb, 3), Contains(jpeg_bomb) && Contains("60000 x 60000") &&
                                                  Contains("before decoding"));

  // The limit is an option: a 6 x 5 image under a limit of 29 pixels, then of 30.
  const std::string small = folder.file("small.png");
  write_bytes(small, png_bytes(6, 5, PngColor::gray, 8, std::vector<uint16_t>(30, 7)));
  CHECK_THROWS_WITH(read_image(small, 1, 29), Contains("6 x 5") && Contains("29 allowed"));
  CHECK(read_image(small, 1, 30).size(2) == 6);
}

TEST_CASE("image split: a bomb among good images stops the load naming it, or is skipped",
          "[image][bad-input]") {
  TemporaryFolder folder("image_bomb_split");
  const std::string root = write_two_class_images(folder.file("images"), 2, 8, 8);
  const std::string bomb = root + "/dark/huge.png";
  write_bytes(bomb, bomb_png(1000000, 1000000));
  const std::vector<ClassEntry> entries = scan_class_folders(root);
  const LabelMap labels = label_map_of(entries);
  ImageSplitOptions options;
  options.height = options.width = 8;
  options.channels = 1;
  CHECK_THROWS_WITH(load_image_split("train", root, labels, root, options, 2, InputPolicy{}),
                    Contains(bomb));
  const ImageSplit split =
      load_image_split("train", root, labels, root, options, 2, InputPolicy{.skip_bad = true});
  CHECK(split.track_count == 4);
  REQUIRE(split.skipped.size() == 1);
  CHECK_THAT(split.skipped.front(), Contains(bomb) && Contains("refused before decoding"));
}
#endif

// The image reader (data/image/): PNGs built byte by byte and JPEGs written with libjpeg, read
// back and checked against the samples written; PIL's convert("L"); the bilinear resize against
// hand-computed values; Normalize; bad files; and torchvision's whole pipeline from a fixture
// (tests/fixtures/make_image.py).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "base/error.h"
#include "data/image/image_file.h"
#include "data/image/image_normalize.h"
#include "data/image/image_resize.h"
#include "data/manifest/class_manifest.h"
#include "engine/io/npy.h"
#include "tests/support/audio_files.h"
#include "tests/support/image_files.h"

using namespace sonata;
using namespace sonata::testing;
using Catch::Contains;

namespace {

// A w x h pattern of every channel's values, distinct per (y, x, c), within [0, 255].
std::vector<uint16_t> pattern(int64_t width, int64_t height, int channels) {
  std::vector<uint16_t> values;
  for (int64_t y = 0; y < height; ++y)
    for (int64_t x = 0; x < width; ++x)
      for (int c = 0; c < channels; ++c)
        values.push_back(uint16_t((37 * y + 11 * x + 80 * c) % 256));
  return values;
}

// A smooth w x h image (JPEG keeps smooth images close at quality 100).
Pixels smooth(int64_t width, int64_t height, int64_t channels) {
  Pixels p{width, height, channels, {}};
  for (int64_t y = 0; y < height; ++y)
    for (int64_t x = 0; x < width; ++x)
      for (int64_t c = 0; c < channels; ++c)
        p.values.push_back(uint8_t(60 + 4 * x + 3 * y + 30 * c));
  return p;
}

float at(const Tensor& image, int64_t c, int64_t y, int64_t x) {
  return image.data<float>()[(c * image.size(1) + y) * image.size(2) + x];
}

}  // namespace

#if SONATA_WITH_IMAGE

TEST_CASE("image: PNG gray, RGB, alpha and 16-bit samples read back exactly", "[image]") {
  TemporaryFolder folder("image_png");
  const int64_t w = 5, h = 3;
  SECTION("gray 8-bit") {
    const auto samples = pattern(w, h, 1);
    write_bytes(folder.file("g.png"), png_bytes(w, h, PngColor::gray, 8, samples));
    const Tensor image = read_image(folder.file("g.png"), 1);
    REQUIRE(image.shape() == Shape{1, h, w});
    for (int64_t i = 0; i < w * h; ++i)
      CHECK(image.data<float>()[i] == float(samples[size_t(i)]) / 255.0f);
    // convert("RGB") of a gray image: the gray in all three channels.
    const Tensor rgb = read_image(folder.file("g.png"), 3);
    for (int64_t c = 0; c < 3; ++c)
      for (int64_t i = 0; i < w * h; ++i)
        CHECK(rgb.data<float>()[c * w * h + i] == float(samples[size_t(i)]) / 255.0f);
  }
  SECTION("RGB and RGBA 8-bit: channels planar, alpha dropped") {
    for (const PngColor color : {PngColor::rgb, PngColor::rgba}) {
      const int channels = color == PngColor::rgb ? 3 : 4;
      const auto samples = pattern(w, h, channels);
      write_bytes(folder.file("c.png"), png_bytes(w, h, color, 8, samples));
      const Tensor image = read_image(folder.file("c.png"), 3);
      REQUIRE(image.shape() == Shape{3, h, w});
      for (int64_t y = 0; y < h; ++y)
        for (int64_t x = 0; x < w; ++x)
          for (int64_t c = 0; c < 3; ++c)
            CHECK(at(image, c, y, x) ==
                  float(samples[size_t((y * w + x) * channels + c)]) / 255.0f);
    }
  }
  SECTION("RGB to one channel: ITU-R 601-2 luma, rounded to 8 bits") {
    // Pure channels and a mix, with the luma PIL gives them (its weights 0.299, 0.587, 0.114
    // in 16-bit fixed point, rounded): R 255 -> 76, G 255 -> 150, B 255 -> 29, gray stays.
    const std::vector<uint16_t> samples = {255, 0, 0, 0, 255, 0, 0, 0, 255, 77, 77, 77};
    write_bytes(folder.file("l.png"), png_bytes(4, 1, PngColor::rgb, 8, samples));
    const Tensor gray = read_image(folder.file("l.png"), 1);
    const std::vector<float> expected = {76 / 255.0f, 150 / 255.0f, 29 / 255.0f, 77 / 255.0f};
    CHECK(gray.to_vector<float>() == expected);
  }
  SECTION("palette, with and without tRNS transparency: the palette's RGB") {
    const std::vector<uint8_t> palette = {10, 20, 30, 200, 100, 0, 255, 255, 255};
    const std::vector<uint8_t> indices = {0, 1, 2, 1, 0, 2};
    for (const bool transparent : {false, true}) {
      INFO("tRNS " << transparent);
      write_bytes(folder.file("p.png"),
                  palette_png_bytes(
                      3, 2, palette, indices,
                      transparent ? std::vector<uint8_t>{0, 128, 255} : std::vector<uint8_t>{}));
      const Tensor image = read_image(folder.file("p.png"), 3);
      REQUIRE(image.shape() == Shape{3, 2, 3});
      for (int64_t i = 0; i < 6; ++i)
        for (int64_t c = 0; c < 3; ++c)
          CHECK(image.data<float>()[c * 6 + i] ==
                float(palette[size_t(indices[size_t(i)] * 3 + c)]) / 255.0f);
    }
  }
  SECTION("16-bit: the high byte") {
    std::vector<uint16_t> samples;
    for (int64_t i = 0; i < w * h; ++i) samples.push_back(uint16_t(i * 4099 + 255));
    write_bytes(folder.file("16.png"), png_bytes(w, h, PngColor::gray, 16, samples));
    const Tensor image = read_image(folder.file("16.png"), 1);
    for (int64_t i = 0; i < w * h; ++i)
      CHECK(image.data<float>()[i] == float(samples[size_t(i)] >> 8) / 255.0f);
  }
}

TEST_CASE("image: JPEG gray and RGB read back within 3/255 of the pixels written", "[image]") {
  // Quality 100, no chroma subsampling, a smooth ramp: the only loss is quantisation of the
  // DCT coefficients by 1 and the colour conversion's rounding, well under 3 levels.
  TemporaryFolder folder("image_jpeg");
  for (const int64_t channels : {int64_t(1), int64_t(3)}) {
    INFO("channels " << channels);
    const Pixels written = smooth(24, 16, channels);
    write_jpeg(folder.file("x.jpg"), written, 100);
    const Tensor image = read_image(folder.file("x.jpg"), channels);
    REQUIRE(image.shape() == Shape{channels, 16, 24});
    float worst = 0;
    for (int64_t y = 0; y < 16; ++y)
      for (int64_t x = 0; x < 24; ++x)
        for (int64_t c = 0; c < channels; ++c)
          worst =
              std::max(worst, std::abs(at(image, c, y, x) * 255.0f -
                                       float(written.values[size_t((y * 24 + x) * channels + c)])));
    CHECK(worst <= 3.0f);
  }
}

TEST_CASE("image: missing, foreign, corrupt and truncated files throw naming the file", "[image]") {
  TemporaryFolder folder("image_bad");
  const auto refused = [](const std::string& path, const std::string& reason) {
    INFO(path);
    CHECK_THROWS_WITH(read_image(path, 3), Contains(path) && Contains(reason));
  };
  refused(folder.file("none.png"), "cannot open");
  write_text(folder.file("text.png"), "not an image at all");
  refused(folder.file("text.png"), "neither a PNG nor a JPEG");
  auto png = png_bytes(4, 4, PngColor::rgb, 8, pattern(4, 4, 3));
  png[45] ^= 0xFF;  // inside IDAT's data: its CRC no longer matches
  write_bytes(folder.file("crc.png"), png);
  refused(folder.file("crc.png"), "corrupt PNG");
  png = png_bytes(4, 4, PngColor::rgb, 8, pattern(4, 4, 3));
  png.resize(png.size() - 30);  // cut inside IDAT
  write_bytes(folder.file("cut.png"), png);
  refused(folder.file("cut.png"), "corrupt PNG");
  write_jpeg(folder.file("whole.jpg"), smooth(32, 32, 3), 90);
  std::ifstream in(folder.file("whole.jpg"), std::ios::binary);
  std::vector<uint8_t> jpeg((std::istreambuf_iterator<char>(in)), {});
  jpeg.resize(jpeg.size() / 2);
  write_bytes(folder.file("cut.jpg"), jpeg);
  refused(folder.file("cut.jpg"), "corrupt JPEG");
}

#endif  // SONATA_WITH_IMAGE

TEST_CASE("image: bilinear resize with half-pixel centres against hand-computed values",
          "[image]") {
  // In 2 x 2 [[0, 1], [2, 3]] -> 4 x 4: the sources of outputs 0..3 are -0.25 (clamped to 0),
  // 0.25, 0.75, 1.25 (past the last pixel: the last pixel), so the weights of the second
  // neighbour are r = 0, 0.25, 0.75, 1 and out[y][x] = 2 r[y] + r[x].
  const Tensor small = from_vector(std::vector<float>{0, 1, 2, 3}, {1, 2, 2});
  const Tensor up = resize_bilinear(small, 4, 4);
  const float r[4] = {0, 0.25f, 0.75f, 1};
  for (int64_t y = 0; y < 4; ++y)
    for (int64_t x = 0; x < 4; ++x) CHECK(at(up, 0, y, x) == Approx(2 * r[y] + r[x]));
  // 1 x 4 [0, 10, 20, 30] -> 1 x 2: sources 0.5 and 2.5, the means of the neighbours, and
  // 3 rows -> 1 row: source 1 (the middle row alone).
  const Tensor row = from_vector(std::vector<float>{0, 10, 20, 30}, {1, 1, 4});
  CHECK(resize_bilinear(row, 1, 2).to_vector<float>() == std::vector<float>{5, 25});
  const Tensor column = from_vector(std::vector<float>{1, 5, 9}, {1, 3, 1});
  CHECK(resize_bilinear(column, 1, 1).to_vector<float>() == std::vector<float>{5});
  // The same size is the identity, channel by channel.
  const Tensor rgb = from_vector(std::vector<float>{1, 2, 3, 4, 5, 6}, {3, 1, 2});
  CHECK(resize_bilinear(rgb, 1, 2).to_vector<float>() == rgb.to_vector<float>());
}

TEST_CASE("image: Normalize per channel, and bad mean/std lists are refused", "[image]") {
  Tensor image = from_vector(std::vector<float>{0, 1, 0.5f, 0.25f}, {2, 1, 2});
  normalize_image(image, {{0.5}, {0.5}});
  CHECK(image.to_vector<float>() == std::vector<float>{-1, 1, 0, -0.5f});
  Tensor two = from_vector(std::vector<float>{0, 1, 0, 1}, {2, 1, 2});
  normalize_image(two, {{0.0, 1.0}, {1.0, 0.5}});
  CHECK(two.to_vector<float>() == std::vector<float>{0, 1, -2, 0});
  CHECK_THROWS_WITH(normalize_image(two, {{0.1, 0.2, 0.3}, {1.0}}), Contains("1 or 2 values"));
  CHECK_THROWS_WITH(normalize_image(two, {{0.1}, {0.0}}), Contains("must be positive"));
}

TEST_CASE("image: a class folder of PNG and JPEG files lists them as items", "[image]") {
  TemporaryFolder folder("image_folder");
  std::filesystem::create_directories(folder.path() / "a");
  std::filesystem::create_directories(folder.path() / "b");
  write_bytes(folder.file("a/1.png"), png_bytes(2, 2, PngColor::gray, 8, pattern(2, 2, 1)));
  write_bytes(folder.file("b/2.JPG"), {0xFF, 0xD8, 0xFF});
  write_text(folder.file("b/notes.txt"), "ignored");
  const auto entries = scan_class_folders(folder.path().string());
  REQUIRE(entries.size() == 2);
  CHECK(entries[0].label == "a");
  CHECK(is_image_path(entries[0].path));
  CHECK(entries[1].label == "b");
  CHECK(is_image_path(entries[1].path));
  CHECK_FALSE(is_image_path("x.wav"));
}

#if SONATA_WITH_IMAGE
TEST_CASE("image: PNG and JPEG through convert, ToTensor, Resize and Normalize equal torchvision",
          "[image]") {
  // tests/fixtures/image/: PIL wrote tiny.png and tiny.jpg (7 x 5 RGB); torchvision 0.14 read
  // them as convert(mode) -> to_tensor -> resize([4, 9], bilinear, antialias=False) ->
  // normalize. PIL and sonata decode JPEG with the same libjpeg-turbo defaults, so the
  // pixels agree exactly; the resize differs from PyTorch's by float rounding only.
  const std::string dir = std::string(SONATA_FIXTURES_DIR) + "/image/";
  struct Case {
    const char* file;
    int64_t channels;
    const char* decoded;
    const char* expected;
    ImageNormalize normalize;
  };
  const Case cases[] = {
      {"tiny.png", 3, "tiny_png_rgb.npy", "tiny_png_rgb_4x9.npy", {{0.5}, {0.5}}},
      {"tiny.png", 1, "tiny_png_l.npy", "tiny_png_l_4x9.npy", {{0.5}, {0.5}}},
      {"tiny.jpg",
       3,
       "tiny_jpg_rgb.npy",
       "tiny_jpg_rgb_4x9.npy",
       {{0.485, 0.456, 0.406}, {0.229, 0.224, 0.225}}},
      {"tiny.jpg", 1, "tiny_jpg_l.npy", "tiny_jpg_l_4x9.npy", {{0.5}, {0.5}}},
  };
  for (const Case& c : cases) {
    INFO(c.file << " with " << c.channels << " channels");
    const Tensor decoded = read_image(dir + c.file, c.channels);
    CHECK(decoded.to_vector<float>() == load_npy(dir + c.decoded).to_vector<float>());
    Tensor item = resize_bilinear(decoded, 4, 9);
    normalize_image(item, c.normalize);
    const std::vector<float> expected = load_npy(dir + c.expected).to_vector<float>();
    const std::vector<float> actual = item.to_vector<float>();
    REQUIRE(actual.size() == expected.size());
    for (size_t i = 0; i < actual.size(); ++i) CHECK(actual[i] == Approx(expected[i]).margin(1e-5));
  }
}
#endif

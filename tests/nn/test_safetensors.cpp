#include <catch2/catch.hpp>

#include <unistd.h>
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "engine/io/crc32c.h"
#include "engine/io/safetensors.h"
#include "engine/ops.h"

using namespace sonata;

namespace {

std::string temp_path(const std::string& name) {
  return (std::string("/tmp/sonata_test_") + std::to_string(::getpid()) + "_" + name);
}

// A file built byte by byte from the format's specification, independently of the writer.
std::vector<uint8_t> spec_file(const std::string& header, const std::vector<uint8_t>& data) {
  std::vector<uint8_t> bytes(8 + header.size() + data.size());
  const uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) bytes[i] = uint8_t(n >> (8 * i));
  std::memcpy(bytes.data() + 8, header.data(), header.size());
  if (!data.empty()) std::memcpy(bytes.data() + 8 + header.size(), data.data(), data.size());
  return bytes;
}

std::vector<uint8_t> float_bytes(std::vector<float> values) {
  std::vector<uint8_t> out(values.size() * 4);
  std::memcpy(out.data(), values.data(), out.size());
  return out;
}

std::string parse_error(const std::vector<uint8_t>& bytes) {
  try {
    parse_safetensors(bytes.data(), bytes.size(), "bad.safetensors");
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("safetensors reads a file laid out by the specification", "[io][safetensors]") {
  const std::string header =
      R"({"__metadata__":{"format":"pt"},"b":{"dtype":"I64","shape":[1],"data_offsets":[16,24]},)"
      R"("a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}})";
  std::vector<uint8_t> data = float_bytes({1.0f, -2.0f, 3.5f, 0.25f});
  const int64_t seven = 7;
  data.insert(data.end(), reinterpret_cast<const uint8_t*>(&seven),
              reinterpret_cast<const uint8_t*>(&seven) + 8);
  const std::vector<uint8_t> bytes = spec_file(header, data);
  const SafetensorsContents contents = parse_safetensors(bytes.data(), bytes.size(), "spec");
  REQUIRE(contents.tensors.size() == 2);
  CHECK(contents.tensors[0].first == "a");  // in data order
  CHECK(contents.tensors[0].second.shape() == Shape{2, 2});
  CHECK(contents.tensors[0].second.to_vector<float>() ==
        std::vector<float>{1.0f, -2.0f, 3.5f, 0.25f});
  CHECK(contents.tensors[1].second.dtype() == DType::i64);
  CHECK(contents.tensors[1].second.item() == 7);
  CHECK(contents.metadata.at("format") == "pt");
}

TEST_CASE("safetensors round-trips every dtype and metadata", "[io][safetensors]") {
  NamedTensors tensors;
  const Tensor base = arange(0, 6, 1, TensorOptions{}.with(DType::f64)).reshape({2, 3});
  for (DType dtype : kAllDTypes)
    tensors.emplace_back(std::string(dtype_name(dtype)), base.to(dtype));
  tensors.emplace_back("empty", zeros({0, 4}));
  tensors.emplace_back("scalar", full({}, 2.5));
  tensors.emplace_back("strided", base.t());  // written contiguous
  const std::string path = temp_path("roundtrip.safetensors");
  save_safetensors(path, tensors, {{"model", "vgg19_bn"}});
  const SafetensorsContents back = load_safetensors(path);
  std::remove(path.c_str());
  REQUIRE(back.tensors.size() == tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    INFO(tensors[i].first);
    CHECK(back.tensors[i].first == tensors[i].first);
    CHECK(back.tensors[i].second.dtype() == tensors[i].second.dtype());
    CHECK(back.tensors[i].second.shape() == tensors[i].second.shape());
    CHECK(back.tensors[i].second.to_vector<double>() == tensors[i].second.to_vector<double>());
  }
  CHECK(back.metadata.at("model") == "vgg19_bn");
}

TEST_CASE("safetensors refuses damaged files with one clear error", "[io][safetensors]") {
  const std::vector<uint8_t> good =
      spec_file(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", float_bytes({1, 2}));
  CHECK_THAT(parse_error(std::vector<uint8_t>(good.begin(), good.begin() + 5)),
             Catch::Contains("no header"));
  CHECK_THAT(parse_error(std::vector<uint8_t>(good.begin(), good.end() - 1)),
             Catch::Contains("outside the 7 bytes"));
  std::vector<uint8_t> huge_header = good;
  huge_header[6] = 0xff;
  CHECK_THAT(parse_error(huge_header), Catch::Contains("runs past the end"));
  CHECK_THAT(parse_error(spec_file(R"({"w":{"dtype":"F32",)", {})),
             Catch::Contains("not valid JSON"));
  CHECK_THAT(parse_error(spec_file(R"([1,2])", {})), Catch::Contains("not a JSON object"));
  CHECK_THAT(
      parse_error(spec_file(R"({"w":{"dtype":"F8_E4M3","shape":[1],"data_offsets":[0,1]}})", {0})),
      Catch::Contains("'F8_E4M3'"));
  CHECK_THAT(parse_error(spec_file(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})",
                                   float_bytes({1, 2}))),
             Catch::Contains("needs 12"));
  CHECK_THAT(parse_error(spec_file(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})",
                                   float_bytes({1, 2}))),
             Catch::Contains("outside"));
  CHECK_THAT(parse_error(spec_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                   R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                                   float_bytes({1, 2}))),
             Catch::Contains("overlap"));
  CHECK_THAT(parse_error(spec_file(R"({"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,8]}})",
                                   float_bytes({1, 2}))),
             Catch::Contains("not a size"));
  CHECK_THAT(parse_error(spec_file(
                 R"({"w":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}})",
                 float_bytes({1, 2}))),
             Catch::Contains("larger than the file"));
  CHECK_THAT(parse_error(spec_file(R"({"w":{"dtype":"F32","shape":[2]}})", float_bytes({1, 2}))),
             Catch::Contains("two data_offsets"));
}

TEST_CASE("a failed save leaves no file and names the path", "[io][safetensors]") {
  CHECK_THROWS_WITH(save_safetensors("/nonexistent-dir/x.safetensors", {{"w", zeros({1})}}),
                    Catch::Contains("/nonexistent-dir/x.safetensors.tmp"));
  CHECK_THROWS_WITH(load_safetensors("/nonexistent-dir/x.safetensors"),
                    Catch::Contains("cannot open"));
}

TEST_CASE("safetensors refuses what the fuzzer's findings need refused",
          "[io][safetensors][fuzz]") {
  // An empty tensor whose other sizes multiply past int64 passes the size check; its strides
  // would overflow (the same input shape as the .npy reader's fuzzer finding).
  CHECK_THAT(
      parse_error(spec_file(
          R"({"w":{"dtype":"F32","shape":[0,1099511627776,8388608],"data_offsets":[0,0]}})", {})),
      Catch::Contains("overflow int64"));
  const std::vector<uint8_t> empty =
      spec_file(R"({"w":{"dtype":"F32","shape":[0,1099511627776],"data_offsets":[0,0]}})", {});
  CHECK(parse_safetensors(empty.data(), empty.size(), "empty").tensors.at(0).second.shape() ==
        Shape{0, 1099511627776});
  // Any byte but 0 and 1 in a bool is undefined behaviour wherever the tensor is read.
  std::vector<uint8_t> mask =
      spec_file(R"({"m":{"dtype":"BOOL","shape":[3],"data_offsets":[0,3]}})", {0, 1, 2});
  CHECK_THAT(parse_error(mask), Catch::Contains("'m' holds BOOL bytes other than 0 and 1"));
  mask.back() = 1;
  CHECK(parse_safetensors(mask.data(), mask.size(), "mask")
            .tensors.at(0)
            .second.to_vector<double>() == std::vector<double>{0, 1, 1});
}

namespace {

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

void write_file(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
}

uint64_t header_length(const std::vector<uint8_t>& bytes) {
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | bytes[size_t(i)];
  return n;
}

std::string check_error(const std::string& path, SafetensorsCheck check) {
  try {
    check_safetensors_file(path, check);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("a saved file carries the CRC-32C of its bytes in its metadata", "[io][safetensors]") {
  const std::string path = temp_path("checksum.safetensors");
  save_safetensors(path, {{"w", arange(0, 10, 1)}, {"b", full({3}, 0.5)}}, {{"model", "ds2"}});
  const std::vector<uint8_t> bytes = read_bytes(path);
  // The rule as the header documents it, applied here from the bytes alone: the CRC-32C of
  // the whole file with the value's eight digits read as '0'.
  const std::string header(bytes.begin() + 8, bytes.begin() + 8 + int64_t(header_length(bytes)));
  const auto metadata = nlohmann::json::parse(header).at("__metadata__");
  const std::string stored = metadata.at("sonata.crc32c").get<std::string>();
  REQUIRE(stored.size() == 8);
  const size_t digits = 8 + header.find("\"sonata.crc32c\":\"") + 17;
  std::vector<uint8_t> zeroed = bytes;
  std::fill(zeroed.begin() + int64_t(digits), zeroed.begin() + int64_t(digits) + 8, '0');
  char expected[9];
  std::snprintf(expected, sizeof expected, "%08x", crc32c_extend(0, zeroed.data(), zeroed.size()));
  CHECK(stored == expected);
  CHECK(metadata.at("model") == "ds2");

  // The reader checks it and keeps it to itself.
  CHECK(load_safetensors(path).metadata == Metadata{{"model", "ds2"}});
  CHECK(check_safetensors_file(path, SafetensorsCheck::checksum) == Metadata{{"model", "ds2"}});
  CHECK_THROWS_WITH(save_safetensors(path, {{"w", zeros({1})}}, {{"sonata.crc32c", "0"}}),
                    Catch::Contains("the file's checksum"));
  std::remove(path.c_str());
}

TEST_CASE("safetensors refuses bytes that do not match the file's checksum", "[io][safetensors]") {
  const std::string path = temp_path("flipped.safetensors");
  save_safetensors(path, {{"w", arange(0, 64, 1)}}, {{"model", "vgg19_bn"}});
  const std::vector<uint8_t> good = read_bytes(path);
  const size_t data_begin = 8 + size_t(header_length(good));
  CHECK(parse_error(good) == "no error");

  // Eight bytes flipped in the middle of the data: the sizes still agree, the values not.
  std::vector<uint8_t> flipped = good;
  for (size_t i = 0; i < 8; ++i) flipped[data_begin + 200 + i] ^= 0xFF;
  CHECK_THAT(parse_error(flipped),
             Catch::Contains("bad.safetensors: the bytes do not match the file's checksum"));
  write_file(path, flipped);
  CHECK_THROWS_WITH(load_safetensors(path), Catch::Contains(path + ": the bytes do not match"));
  CHECK_THAT(check_error(path, SafetensorsCheck::checksum),
             Catch::Contains(path + ": the bytes do not match"));
  CHECK(check_error(path, SafetensorsCheck::sizes) == "no error");  // the header alone

  // The header is covered too: a metadata value changed in place, same length.
  std::vector<uint8_t> renamed = good;
  const std::string header(good.begin() + 8, good.begin() + int64_t(data_begin));
  const size_t model = 8 + header.find("vgg19_bn");
  renamed[model + 7] = 'm';
  CHECK_THAT(parse_error(renamed), Catch::Contains("do not match the file's checksum"));

  // A checksum that is not eight hex digits in one place is refused, not skipped.
  std::string broken = header;
  broken.replace(header.find("\"sonata.crc32c\":\"") + 17, 8, "zzzzzzzz");
  CHECK_THAT(parse_error(spec_file(
                 broken, std::vector<uint8_t>(good.begin() + int64_t(data_begin), good.end()))),
             Catch::Contains("'sonata.crc32c' is not written as sonata writes it"));
  std::remove(path.c_str());
}

TEST_CASE("safetensors files without a checksum (older sonata, other writers) still load",
          "[io][safetensors]") {
  const std::vector<uint8_t> bytes =
      spec_file(R"({"__metadata__":{"format":"sonata-checkpoint-1"},)"
                R"("w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})",
                float_bytes({1.5f, -2.0f}));
  const SafetensorsContents contents = parse_safetensors(bytes.data(), bytes.size(), "old");
  CHECK(contents.tensors.at(0).second.to_vector<float>() == std::vector<float>{1.5f, -2.0f});
  CHECK(contents.metadata == Metadata{{"format", "sonata-checkpoint-1"}});
  const std::string path = temp_path("unchecked.safetensors");
  write_file(path, bytes);
  CHECK(check_safetensors_file(path, SafetensorsCheck::checksum) == contents.metadata);
  std::remove(path.c_str());
}

// safetensors written tensor by tensor and read in part (engine/io/safetensors.h): a
// streamed file is byte for byte the file laid out by the format's rules and the one
// save_safetensors writes; the partial reader returns exactly the tensors asked for, and
// still refuses a damaged file and a name the file does not hold.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "base/error.h"
#include "engine/io/crc32c.h"
#include "engine/io/safetensors.h"
#include "engine/ops.h"
#include "tests/support/error_of.h"

using namespace sonata;
using sonata::testing::error_of;

namespace {

std::string temp_path(const std::string& name) {
  return std::string("/tmp/sonata_test_stream_") + std::to_string(::getpid()) + "_" + name;
}

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
}

std::vector<uint8_t> tensor_bytes(const Tensor& tensor) {
  const Tensor host = tensor.contiguous();
  const auto* p = static_cast<const uint8_t*>(host.data_ptr());
  return std::vector<uint8_t>(p, p + host.numel() * int64_t(dtype_size(host.dtype())));
}

// Of several dtypes and shapes, an empty one and a 0-dim one among them, in an order that
// is not the names' (the data follows the order given, the header sorts its keys).
NamedTensors mixed_tensors() {
  return {{"z.weight", arange(0, 12, 1).reshape({3, 4})},
          {"a.count", full({2}, 7, TensorOptions{}.with(DType::i64))},
          {"m.empty", zeros({0, 3})},
          {"b.mask", full({3}, 1, TensorOptions{}.with(DType::boolean))},
          {"c.scale", full({}, 0.5, TensorOptions{}.with(DType::f64))}};
}

// The file the format's rules lay out for mixed_tensors() with {"model": "ds2"}, built
// here byte by byte: the JSON header with sorted keys and back-to-back offsets, padded with
// spaces to 8 bytes, then the data in the tensors' order; the checksum the CRC-32C of it
// all with its eight digits read as '0'.
std::vector<uint8_t> laid_out_file() {
  std::string header = R"({"__metadata__":{"model":"ds2","sonata.crc32c":"00000000"},)"
                       R"("a.count":{"data_offsets":[48,64],"dtype":"I64","shape":[2]},)"
                       R"("b.mask":{"data_offsets":[64,67],"dtype":"BOOL","shape":[3]},)"
                       R"("c.scale":{"data_offsets":[67,75],"dtype":"F64","shape":[]},)"
                       R"("m.empty":{"data_offsets":[64,64],"dtype":"F32","shape":[0,3]},)"
                       R"("z.weight":{"data_offsets":[0,48],"dtype":"F32","shape":[3,4]}})";
  header.append((8 - header.size() % 8) % 8, ' ');
  std::string file(8, '\0');
  for (int i = 0; i < 8; ++i) file[size_t(i)] = char(uint64_t(header.size()) >> (8 * i));
  file += header;
  for (const auto& [name, tensor] : mixed_tensors()) {
    const std::vector<uint8_t> data = tensor_bytes(tensor);
    file.append(data.begin(), data.end());
  }
  std::vector<uint8_t> bytes(file.begin(), file.end());
  char digits[9];
  std::snprintf(digits, sizeof digits, "%08x", crc32c_extend(0, bytes.data(), bytes.size()));
  const size_t at = 8 + header.find("00000000");
  std::memcpy(bytes.data() + at, digits, 8);
  return bytes;
}

}  // namespace

TEST_CASE(
    "a streamed safetensors file is byte for byte the one laid out and the one "
    "save_safetensors writes",
    "[io][safetensors]") {
  const NamedTensors tensors = mixed_tensors();
  const std::string whole = temp_path("whole.safetensors");
  const std::string streamed = temp_path("streamed.safetensors");
  save_safetensors(whole, tensors, {{"model", "ds2"}});

  // Fetched one at a time as fresh copies (a strided view for the first), each asked for
  // once and in order.
  TensorSource source;
  for (const auto& [name, tensor] : tensors)
    source.specs.push_back({name, tensor.dtype(), tensor.shape()});
  std::vector<size_t> asked;
  source.fetch = [&](size_t index) {
    asked.push_back(index);
    const Tensor& tensor = tensors[index].second;
    return index == 0 ? tensor.t().contiguous().t() : tensor.clone();
  };
  save_safetensors_streamed(streamed, source, {{"model", "ds2"}});
  CHECK(asked == std::vector<size_t>{0, 1, 2, 3, 4});

  const std::vector<uint8_t> expected = laid_out_file();
  CHECK(read_bytes(streamed) == expected);
  CHECK(read_bytes(whole) == expected);
  CHECK(load_safetensors(streamed).metadata == Metadata{{"model", "ds2"}});
  std::remove(whole.c_str());
  std::remove(streamed.c_str());
}

TEST_CASE("a streamed save refuses a tensor that is not what its header says, leaving no file",
          "[io][safetensors]") {
  const std::string path = temp_path("wrong.safetensors");
  TensorSource source;
  source.specs = {{"w", DType::f32, {2, 2}}, {"b", DType::f32, {2}}};
  source.fetch = [](size_t index) { return index == 0 ? zeros({2, 2}) : zeros({3}); };
  const std::string message = error_of([&] { save_safetensors_streamed(path, source); });
  CHECK_THAT(message, Catch::Contains(path) && Catch::Contains("tensor 'b' arrived as f32 [3]") &&
                          Catch::Contains("the header says f32 [2]"));
  CHECK_FALSE(std::filesystem::exists(path));
  CHECK_FALSE(std::filesystem::exists(path + ".tmp"));
}

TEST_CASE(
    "safetensors read in part returns exactly the tensors asked for and still checks the checksum",
    "[io][safetensors]") {
  const std::string path = temp_path("part.safetensors");
  const NamedTensors tensors = mixed_tensors();
  save_safetensors(path, tensors, {{"model", "ds2"}});

  const SafetensorsHeader header = read_safetensors_header(path);
  REQUIRE(header.tensors.size() == tensors.size());
  CHECK(header.metadata == Metadata{{"model", "ds2"}});
  // In the order of their data, as written (the empty m.empty before b.mask, where both
  // start).
  std::vector<std::string> names;
  for (const TensorSpec& spec : header.tensors) names.push_back(spec.name);
  CHECK(names == std::vector<std::string>{"z.weight", "a.count", "m.empty", "b.mask", "c.scale"});
  CHECK(header.tensors[0].name == "z.weight");
  CHECK(header.tensors[0].shape == Shape{3, 4});
  CHECK(header.tensors[0].dtype == DType::f32);

  // Asked for in another order than the file's: returned in the file's.
  const SafetensorsContents part = load_safetensors_tensors(path, {"c.scale", "a.count"});
  REQUIRE(part.tensors.size() == 2);
  CHECK(part.tensors[0].first == "a.count");
  CHECK(part.tensors[0].second.to_vector<int64_t>() == std::vector<int64_t>{7, 7});
  CHECK(part.tensors[1].first == "c.scale");
  CHECK(part.tensors[1].second.dim() == 0);
  CHECK(part.tensors[1].second.item() == 0.5);
  CHECK(part.metadata == Metadata{{"model", "ds2"}});
  CHECK(load_safetensors_tensors(path, {}).tensors.empty());

  CHECK_THAT(error_of([&] {
               load_safetensors_tensors(path, {"a.count", "missing.bias"});
             }),
             Catch::Contains(path) && Catch::Contains("no tensor 'missing.bias'"));

  // A byte flipped in a tensor that is not asked for: the file is still refused.
  std::vector<uint8_t> bytes = read_bytes(path);
  bytes[bytes.size() - 75 + 20] ^= 0x40;  // inside z.weight, the first 48 bytes of the data
  write_bytes(path, bytes);
  CHECK_THAT(error_of([&] { load_safetensors_tensors(path, {"c.scale"}); }),
             Catch::Contains(path) && Catch::Contains("do not match the file's checksum"));
  CHECK_THAT(error_of([&] { load_safetensors_tensors(path, {}); }),
             Catch::Contains("do not match the file's checksum"));
  std::remove(path.c_str());
}

TEST_CASE("reading rows of a tensor keeps those rows alone and still checks the whole file",
          "[io][safetensors]") {
  const std::string path = temp_path("rows.safetensors");
  std::vector<float> counting(15);
  for (size_t i = 0; i < counting.size(); ++i) counting[i] = float(i);
  const Tensor weight = from_vector(counting, {5, 3});
  const Tensor bias = from_vector(std::vector<double>{0, 1, 2, 3, 4}, {5});
  save_safetensors(path, {{"fc.weight", weight}, {"fc.bias", bias}});

  const SafetensorsContents part = load_safetensors_tensors(
      path, {"fc.weight", "fc.bias"}, {{"fc.weight", {1, 4}}, {"fc.bias", {4, 5}}});
  REQUIRE(part.tensors.size() == 2);
  std::map<std::string, Tensor> read(part.tensors.begin(), part.tensors.end());
  CHECK(read.at("fc.weight").shape() == Shape{3, 3});
  CHECK(read.at("fc.weight").to_vector<float>() ==
        weight.slice(0, 1, 4).contiguous().to_vector<float>());
  CHECK(read.at("fc.bias").to_vector<double>() == std::vector<double>{4});
  // No rows: an empty piece, still a tensor of the file's other dims.
  CHECK(load_safetensors_tensors(path, {"fc.weight"}, {{"fc.weight", {2, 2}}})
            .tensors[0]
            .second.shape() == Shape{0, 3});

  CHECK_THAT(error_of([&] {
               load_safetensors_tensors(path, {"fc.weight"}, {{"fc.weight", {3, 6}}});
             }),
             Catch::Contains(path) && Catch::Contains("rows [3, 6) of tensor 'fc.weight'") &&
                 Catch::Contains("[5, 3]"));

  // A byte flipped in rows not read: the file is refused all the same.
  std::vector<uint8_t> bytes = read_bytes(path);
  bytes[bytes.size() - 1] ^= 0x40;  // in the last row of the last tensor, not read below
  write_bytes(path, bytes);
  CHECK_THAT(error_of([&] {
               load_safetensors_tensors(path, {"fc.weight", "fc.bias"},
                                        {{"fc.weight", {0, 1}}, {"fc.bias", {0, 1}}});
             }),
             Catch::Contains("do not match the file's checksum"));
  std::remove(path.c_str());
}

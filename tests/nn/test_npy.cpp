#include <catch2/catch.hpp>

#include <unistd.h>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "base/error.h"
#include "engine/io/npy.h"
#include "engine/ops.h"

using namespace sonata;

namespace {
// A v1.0 file laid out by hand from NumPy's format description.
std::vector<uint8_t> npy_file(const std::string& header, size_t data_bytes) {
  const uint8_t prefix[] = {0x93,
                            'N',
                            'U',
                            'M',
                            'P',
                            'Y',
                            1,
                            0,
                            uint8_t(header.size() & 0xff),
                            uint8_t(header.size() >> 8)};
  std::vector<uint8_t> bytes(sizeof(prefix) + header.size() + data_bytes);
  std::memcpy(bytes.data(), prefix, sizeof(prefix));
  std::memcpy(bytes.data() + sizeof(prefix), header.data(), header.size());
  for (size_t i = 0; i < data_bytes; ++i) bytes[sizeof(prefix) + header.size() + i] = uint8_t(i);
  return bytes;
}
std::string npy_error(const std::vector<uint8_t>& bytes) {
  try {
    parse_npy(bytes.data(), bytes.size(), "x.npy");
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}
}  // namespace

TEST_CASE(".npy reads NumPy's layout and round-trips", "[io][npy]") {
  std::vector<uint8_t> bytes =
      npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }\n", 0);
  const float values[] = {1, 2, 3, 4, 5, 6.5f};
  bytes.insert(bytes.end(), reinterpret_cast<const uint8_t*>(values),
               reinterpret_cast<const uint8_t*>(values) + sizeof(values));
  const Tensor t = parse_npy(bytes.data(), bytes.size(), "spec");
  CHECK(t.shape() == Shape{2, 3});
  CHECK(t.to_vector<float>() == std::vector<float>{1, 2, 3, 4, 5, 6.5f});

  const std::string path = "/tmp/sonata_npy_" + std::to_string(::getpid()) + ".npy";
  for (const Tensor& original :
       {arange(0, 12, 1, TensorOptions{}.with(DType::f64)).reshape({3, 4}).t(),
        from_vector(std::vector<int64_t>{3, -1, 7}, {3}), full({}, 2.0), zeros({0, 5})}) {
    save_npy(path, original);
    for (const Tensor& back : {load_npy(path), map_npy(path)}) {
      CHECK(back.dtype() == original.dtype());
      CHECK(back.shape() == original.shape());
      CHECK(back.to_vector<double>() == original.to_vector<double>());
    }
  }
  // A mapping outlives the file's name, and a damaged file is refused as load_npy refuses it.
  save_npy(path, full({3}, 1.5));
  const Tensor mapped = map_npy(path);
  std::remove(path.c_str());
  CHECK(mapped.to_vector<float>() == std::vector<float>{1.5f, 1.5f, 1.5f});
  const std::vector<uint8_t> short_file =
      npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }\n", 8);
  std::FILE* file = std::fopen(path.c_str(), "wb");
  std::fwrite(short_file.data(), 1, short_file.size(), file);
  std::fclose(file);
  CHECK_THROWS_WITH(map_npy(path), Catch::Contains("needs 16"));
  std::remove(path.c_str());
  CHECK_THROWS_WITH(map_npy(path), Catch::Contains("cannot open"));
}

TEST_CASE(".npy refuses damaged or unsupported files by name", "[io][npy]") {
  CHECK_THAT(npy_error({'P', 'K', 3, 4}), Catch::Contains("bad magic"));
  std::vector<uint8_t> long_header = npy_file("{'descr': '<f4', }", 0);
  long_header[8] = 0xff;
  CHECK_THAT(npy_error(long_header), Catch::Contains("runs past the end"));
  CHECK_THAT(npy_error(npy_file("{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }", 4)),
             Catch::Contains("'>f4'"));
  CHECK_THAT(npy_error(npy_file("{'descr': '<f4', 'fortran_order': True, 'shape': (1,), }", 4)),
             Catch::Contains("Fortran"));
  CHECK_THAT(npy_error(npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", 8)),
             Catch::Contains("needs 12"));
  CHECK_THAT(npy_error(npy_file("{'descr': '<f4', 'fortran_order': False, }", 4)),
             Catch::Contains("'shape'"));
  CHECK_THAT(npy_error(npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }", 4)),
             Catch::Contains("not a tuple of sizes"));
  CHECK_THAT(
      npy_error(npy_file(
          "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999, 99999999999), }", 4)),
      Catch::Contains("larger than the file"));
}

TEST_CASE(".npy inputs found by the fuzzer (tools/fuzz.sh) stay refused", "[io][npy][fuzz]") {
  // An empty array whose other sizes multiply past int64: its strides overflowed (UBSan:
  // signed integer overflow in contiguous_strides). The fuzzer's input, byte for byte.
  const char found[] =
      "\x93NUMPY\x01\x00v\x00{'descr': '|b1', 'fortran_order': False, 'shape': "
      "(0,00000000000100000400000000 40008000 3)PY\x01\x00\x00\x00\x04\xfb\x00\x00\x00\x00\x00"
      "\x00\x00\x00\x00\x00\x00\x00\x00     \x0a";
  const std::vector<uint8_t> bytes(found, found + sizeof(found) - 1);
  REQUIRE(bytes.size() == 128);
  CHECK_THAT(npy_error(bytes), Catch::Contains("too large"));
  CHECK_THAT(
      npy_error(npy_file(
          "{'descr': '<f4', 'fortran_order': False, 'shape': (0, 1099511627776, 8388608), }", 0)),
      Catch::Contains("too large"));
  // Empty arrays with large but representable sizes are still read.
  const std::vector<uint8_t> empty =
      npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (0, 1099511627776), }", 0);
  CHECK(parse_npy(empty.data(), empty.size(), "empty.npy").shape() == Shape{0, 1099511627776});
}

TEST_CASE(".npy bool data holds only 0 and 1", "[io][npy]") {
  std::vector<uint8_t> bytes =
      npy_file("{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }", 3);  // 0, 1, 2
  CHECK_THAT(npy_error(bytes), Catch::Contains("bytes other than 0 and 1"));
  bytes.back() = 1;
  CHECK(parse_npy(bytes.data(), bytes.size(), "mask.npy").to_vector<double>() ==
        std::vector<double>{0, 1, 1});
}

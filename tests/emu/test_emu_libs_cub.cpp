// The emulated cub::DeviceRadixSort::SortPairs against std::stable_sort.
#include <cub/device/device_radix_sort.cuh>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <numeric>

#include "tests/emu/test_emu_libs_support.h"

using sonata::emu::test::DeviceBuffer;
using sonata::emu::test::TestStream;

TEST_CASE("emulated SortPairs is a stable sort of the key bits asked for", "[emu][cub]") {
  TestStream stream;
  const int n = 200;
  std::vector<uint64_t> keys(n);
  std::vector<int64_t> values(n);
  std::mt19937 engine(7);
  for (int i = 0; i < n; ++i) keys[size_t(i)] = engine() % 37, values[size_t(i)] = i;
  const int end_bit = 6;  // 37 < 64
  size_t bytes = 0;
  REQUIRE(cub::DeviceRadixSort::SortPairs(
              nullptr, bytes, static_cast<const uint64_t*>(nullptr),
              static_cast<uint64_t*>(nullptr), static_cast<const int64_t*>(nullptr),
              static_cast<int64_t*>(nullptr), n, 0, end_bit, stream.get()) == cudaSuccess);
  CHECK(bytes > 0);
  DeviceBuffer keys_in(n * 8), keys_out(n * 8), values_in(n * 8), values_out(n * 8), temp(bytes);
  keys_in.upload(keys), values_in.upload(values);
  REQUIRE(cub::DeviceRadixSort::SortPairs(temp.get(), bytes, keys_in.as<const uint64_t>(),
                                          keys_out.as<uint64_t>(), values_in.as<const int64_t>(),
                                          values_out.as<int64_t>(), n, 0, end_bit,
                                          stream.get()) == cudaSuccess);
  REQUIRE(cudaStreamSynchronize(stream.get()) == cudaSuccess);
  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return keys[size_t(a)] < keys[size_t(b)]; });
  const auto got_keys = keys_out.download<uint64_t>(n);
  const auto got_values = values_out.download<int64_t>(n);
  for (int i = 0; i < n; ++i) {
    CHECK(got_keys[size_t(i)] == keys[size_t(order[size_t(i)])]);
    CHECK(got_values[size_t(i)] == order[size_t(i)]);
  }
}

TEST_CASE("emulated SortPairs orders signed and floating keys as CUB does", "[emu][cub]") {
  TestStream stream;
  const std::vector<float> keys = {0.5f, -2.0f, 3.0f, -0.25f, 0.0f, -2.0f};
  const std::vector<int32_t> values = {0, 1, 2, 3, 4, 5};
  const int n = int(keys.size());
  size_t bytes = 0;
  REQUIRE(cub::DeviceRadixSort::SortPairs(nullptr, bytes, keys.data(), (float*)nullptr,
                                          values.data(), (int32_t*)nullptr, n) == cudaSuccess);
  DeviceBuffer ki(n * 4), ko(n * 4), vi(n * 4), vo(n * 4), temp(bytes);
  ki.upload(keys), vi.upload(values);
  REQUIRE(cub::DeviceRadixSort::SortPairs(temp.get(), bytes, ki.as<const float>(), ko.as<float>(),
                                          vi.as<const int32_t>(), vo.as<int32_t>(), n, 0, 32,
                                          stream.get()) == cudaSuccess);
  REQUIRE(cudaStreamSynchronize(stream.get()) == cudaSuccess);
  CHECK(ko.download<float>(size_t(n)) ==
        std::vector<float>{-2.0f, -2.0f, -0.25f, 0.0f, 0.5f, 3.0f});
  CHECK(vo.download<int32_t>(size_t(n)) == std::vector<int32_t>{1, 5, 3, 4, 0, 2});
}

TEST_CASE("emulated SortPairs refuses temp storage smaller than its size query", "[emu][cub]") {
  TestStream stream;
  DeviceBuffer k(64), v(64), ko(64), vo(64), temp(4096);
  size_t bytes = 0;
  REQUIRE(cub::DeviceRadixSort::SortPairs(nullptr, bytes, k.as<const uint32_t>(), ko.as<uint32_t>(),
                                          v.as<const uint32_t>(), vo.as<uint32_t>(),
                                          16) == cudaSuccess);
  size_t small = bytes - 1;
  CHECK(cub::DeviceRadixSort::SortPairs(
            temp.get(), small, k.as<const uint32_t>(), ko.as<uint32_t>(), v.as<const uint32_t>(),
            vo.as<uint32_t>(), 16, 0, 32, stream.get()) == cudaErrorInvalidValue);
}

TEST_CASE("emulated SortPairs takes -0.0 and +0.0 as one key, kept in input order", "[emu][cub]") {
  // CUB: "Positive and negative zeros are considered equivalent, and will be treated as such
  // in the output": a stable sort keeps their input order; each key keeps its own bits.
  TestStream stream;
  const std::vector<float> keys = {0.0f, -0.0f, 1.0f, -0.0f, 0.0f, -1.0f};
  const std::vector<int32_t> values = {0, 1, 2, 3, 4, 5};
  const int n = int(keys.size());
  size_t bytes = 0;
  REQUIRE(cub::DeviceRadixSort::SortPairs(nullptr, bytes, keys.data(), (float*)nullptr,
                                          values.data(), (int32_t*)nullptr, n) == cudaSuccess);
  DeviceBuffer ki(n * 4), ko(n * 4), vi(n * 4), vo(n * 4), temp(bytes);
  ki.upload(keys), vi.upload(values);
  REQUIRE(cub::DeviceRadixSort::SortPairs(temp.get(), bytes, ki.as<const float>(), ko.as<float>(),
                                          vi.as<const int32_t>(), vo.as<int32_t>(), n, 0, 32,
                                          stream.get()) == cudaSuccess);
  REQUIRE(cudaStreamSynchronize(stream.get()) == cudaSuccess);
  CHECK(vo.download<int32_t>(size_t(n)) == std::vector<int32_t>{5, 0, 1, 3, 4, 2});
  std::vector<bool> negative;
  for (const float key : ko.download<float>(size_t(n))) negative.push_back(std::signbit(key));
  CHECK(negative == std::vector<bool>{true, false, true, true, false, false});

  REQUIRE(cub::DeviceRadixSort::SortPairsDescending(
              temp.get(), bytes, ki.as<const float>(), ko.as<float>(), vi.as<const int32_t>(),
              vo.as<int32_t>(), n, 0, 32, stream.get()) == cudaSuccess);
  REQUIRE(cudaStreamSynchronize(stream.get()) == cudaSuccess);
  CHECK(vo.download<int32_t>(size_t(n)) == std::vector<int32_t>{2, 0, 1, 3, 4, 5});
}

TEST_CASE("emulated SortPairs refuses outputs that overlap its inputs", "[emu][cub]") {
  // CUB's precondition: the output ranges shall not overlap the input ranges in any way.
  TestStream stream;
  const int n = 16;
  DeviceBuffer keys(2 * n * 4), values(2 * n * 4), temp(4096);
  keys.upload(std::vector<uint32_t>(2 * n, 3u)), values.upload(std::vector<uint32_t>(2 * n, 1u));
  size_t bytes = 0;
  REQUIRE(cub::DeviceRadixSort::SortPairs(nullptr, bytes, keys.as<const uint32_t>(),
                                          keys.as<uint32_t>(), values.as<const uint32_t>(),
                                          values.as<uint32_t>(), n) == cudaSuccess);
  REQUIRE(bytes <= 4096);
  const uint32_t* keys_in = keys.as<const uint32_t>();
  const uint32_t* values_in = values.as<const uint32_t>();
  uint32_t* keys_apart = keys.as<uint32_t>() + n;
  uint32_t* values_apart = values.as<uint32_t>() + n;
  auto sort = [&](uint32_t* keys_out, uint32_t* values_out) {
    return cub::DeviceRadixSort::SortPairs(temp.get(), bytes, keys_in, keys_out, values_in,
                                           values_out, n, 0, 32, stream.get());
  };
  CHECK(sort(keys.as<uint32_t>(), values_apart) == cudaErrorInvalidValue);      // in place
  CHECK(sort(keys_apart - 1, values_apart) == cudaErrorInvalidValue);           // one key
  CHECK(sort(keys_apart, values.as<uint32_t>() + 3) == cudaErrorInvalidValue);  // values
  CHECK(sort(keys_apart, values_apart) == cudaSuccess);
  REQUIRE(cudaStreamSynchronize(stream.get()) == cudaSuccess);
}

// cub::DeviceRadixSort::SortPairs on the CPU: a stable sort of the keys' bits
// [begin_bit, end_bit) in CUB's order (signed keys with the sign bit flipped, floating keys
// by their IEEE order with negatives reversed and -0.0 equal to +0.0), as one piece of work on
// the stream; outputs overlapping inputs are refused.
#include <cub/device/device_radix_sort.cuh>

#include <algorithm>
#include <cstring>
#include <iterator>
#include <numeric>
#include <string>
#include <vector>

#include "emu/libs/internal.h"

namespace sonata::emu::cub_detail {
namespace {

// The emulated temp storage: what a radix sort needs for its double buffers, so a caller
// that allocates less than it was told is caught writing past its allocation.
size_t temp_bytes(int64_t items, size_t key_bytes, size_t value_bytes) {
  const size_t bytes = size_t(items) * (key_bytes + value_bytes) + 1024;
  return (bytes + 255) / 256 * 256;
}

uint64_t ordered_bits(const char* key, size_t bytes, KeyKind kind) {
  uint64_t bits = 0;
  std::memcpy(&bits, key, bytes);  // little-endian: low bytes first
  const uint64_t sign = uint64_t(1) << (8 * bytes - 1);
  switch (kind) {
    case KeyKind::unsigned_int:
      return bits;
    case KeyKind::signed_int:
      return bits ^ sign;
    case KeyKind::floating: {
      // CUB: "Positive and negative zeros are considered equivalent" -- its digit
      // extractors map -0.0 to +0.0's ordered bits (ProcessFloatMinusZero), so the two are
      // one key and keep their input order; the keys themselves move unchanged.
      if (bits == sign) bits = 0;
      const uint64_t mask = bytes == 8 ? ~uint64_t(0) : (uint64_t(1) << (8 * bytes)) - 1;
      return (bits & sign) ? (~bits & mask) : (bits | sign);
    }
  }
  return bits;
}

struct Range {
  const char* name;
  const void* begin;
  size_t bytes;
};

bool overlap(const Range& a, const Range& b) {
  const auto* a0 = static_cast<const char*>(a.begin);
  const auto* b0 = static_cast<const char*>(b.begin);
  return a.bytes && b.bytes && a0 < b0 + b.bytes && b0 < a0 + a.bytes;
}

}  // namespace

cudaError_t sort_pairs(void* temp_storage, size_t& temp_storage_bytes, const void* keys_in,
                       void* keys_out, const void* values_in, void* values_out, int64_t items,
                       size_t key_bytes, KeyKind kind, size_t value_bytes, int begin_bit,
                       int end_bit, cudaStream_t stream, bool descending) {
  const size_t needed = temp_bytes(std::max<int64_t>(items, 0), key_bytes, value_bytes);
  if (!temp_storage) {
    temp_storage_bytes = needed;
    return cudaSuccess;
  }
  if (items < 0 || begin_bit < 0 || end_bit > int(8 * key_bytes) || begin_bit > end_bit) {
    library_log("CUB", "DeviceRadixSort::SortPairs: invalid item count or bit range [" +
                           std::to_string(begin_bit) + ", " + std::to_string(end_bit) + ")");
    return cudaErrorInvalidValue;
  }
  if (temp_storage_bytes < needed) {
    library_log("CUB", "DeviceRadixSort::SortPairs: temp storage of " +
                           std::to_string(temp_storage_bytes) + " bytes is smaller than the " +
                           std::to_string(needed) + " the size query returned");
    return cudaErrorInvalidValue;
  }
  if (items == 0) return cudaSuccess;
  const size_t n = size_t(items);
  // CUB's precondition: the output ranges "shall not overlap" the input ranges "in any way"
  // (the sort is not in place; a card gives garbage). The emulator refuses instead.
  const Range written[] = {{"d_keys_out", keys_out, n * key_bytes},
                           {"d_values_out", values_out, n * value_bytes},
                           {"d_temp_storage", temp_storage, needed}};
  const Range read[] = {{"d_keys_in", keys_in, n * key_bytes},
                        {"d_values_in", values_in, n * value_bytes}};
  for (size_t w = 0; w < std::size(written); ++w) {
    for (const Range& r : read) {
      if (overlap(written[w], r)) {
        library_log("CUB", std::string("DeviceRadixSort::SortPairs: ") + written[w].name +
                               " overlaps " + r.name + " (the sort is not in place)");
        return cudaErrorInvalidValue;
      }
    }
    for (size_t o = w + 1; o < std::size(written); ++o) {
      if (overlap(written[w], written[o])) {
        library_log("CUB", std::string("DeviceRadixSort::SortPairs: ") + written[w].name +
                               " overlaps " + written[o].name);
        return cudaErrorInvalidValue;
      }
    }
  }
  Work work;
  work.name =
      descending ? "cub::DeviceRadixSort::SortPairsDescending" : "cub::DeviceRadixSort::SortPairs";
  work.kind = WorkKind::library;
  work.cost = {.math = "memory", .library = "cub"};  // bytes: the ranges below
  work.reads = {{keys_in, n * key_bytes}, {values_in, n * value_bytes}};
  work.writes = {{keys_out, n * key_bytes}, {values_out, n * value_bytes}, {temp_storage, needed}};
  work.run = [=] {
    const auto* keys = static_cast<const char*>(keys_in);
    const auto* values = static_cast<const char*>(values_in);
    const int width = end_bit - begin_bit;
    const uint64_t mask = width >= 64 ? ~uint64_t(0) : (uint64_t(1) << width) - 1;
    std::vector<uint64_t> digits(n);
    for (size_t i = 0; i < n; ++i)
      digits[i] = (ordered_bits(keys + i * key_bytes, key_bytes, kind) >> begin_bit) & mask;
    std::vector<size_t> order(n);
    std::iota(order.begin(), order.end(), size_t(0));
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return descending ? digits[a] > digits[b] : digits[a] < digits[b];
    });
    // Through a copy, so the inputs stay intact.
    std::vector<char> sorted_keys(n * key_bytes), sorted_values(n * value_bytes);
    for (size_t i = 0; i < n; ++i) {
      std::memcpy(&sorted_keys[i * key_bytes], keys + order[i] * key_bytes, key_bytes);
      std::memcpy(&sorted_values[i * value_bytes], values + order[i] * value_bytes, value_bytes);
    }
    std::memcpy(keys_out, sorted_keys.data(), sorted_keys.size());
    std::memcpy(values_out, sorted_values.data(), sorted_values.size());
  };
  return enqueue(stream, std::move(work));
}

}  // namespace sonata::emu::cub_detail

#pragma once
// The emulator's cub::DeviceRadixSort::SortPairs: the two-phase call (a null temp storage
// asks its size; the second call sorts) as one piece of work on the stream that reads the
// input keys and values and writes the outputs and the temp storage. Stable, over the key
// bits [begin_bit, end_bit), keys ordered as CUB orders them (emu/libs/cub_sort.cpp).
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "driver_types.h"

namespace sonata::emu::cub_detail {

enum class KeyKind { unsigned_int, signed_int, floating };

// Type-erased SortPairs; the template below fills in the sizes and the key kind.
cudaError_t sort_pairs(void* temp_storage, size_t& temp_storage_bytes, const void* keys_in,
                       void* keys_out, const void* values_in, void* values_out, int64_t num_items,
                       size_t key_bytes, KeyKind key_kind, size_t value_bytes, int begin_bit,
                       int end_bit, cudaStream_t stream, bool descending);

template <typename Key>
constexpr KeyKind key_kind() {
  if constexpr (std::is_floating_point_v<Key>) return KeyKind::floating;
  if constexpr (std::is_signed_v<Key>) return KeyKind::signed_int;
  return KeyKind::unsigned_int;
}

}  // namespace sonata::emu::cub_detail

namespace cub {

struct DeviceRadixSort {
  template <typename KeyT, typename ValueT, typename NumItemsT>
  static cudaError_t SortPairs(void* d_temp_storage, size_t& temp_storage_bytes,
                               const KeyT* d_keys_in, KeyT* d_keys_out, const ValueT* d_values_in,
                               ValueT* d_values_out, NumItemsT num_items, int begin_bit = 0,
                               int end_bit = sizeof(KeyT) * 8, cudaStream_t stream = 0) {
    static_assert(std::is_arithmetic_v<KeyT>, "the emulated SortPairs takes arithmetic keys");
    return sonata::emu::cub_detail::sort_pairs(
        d_temp_storage, temp_storage_bytes, d_keys_in, d_keys_out, d_values_in, d_values_out,
        int64_t(num_items), sizeof(KeyT), sonata::emu::cub_detail::key_kind<KeyT>(), sizeof(ValueT),
        begin_bit, end_bit, stream, false);
  }
  template <typename KeyT, typename ValueT, typename NumItemsT>
  static cudaError_t SortPairsDescending(void* d_temp_storage, size_t& temp_storage_bytes,
                                         const KeyT* d_keys_in, KeyT* d_keys_out,
                                         const ValueT* d_values_in, ValueT* d_values_out,
                                         NumItemsT num_items, int begin_bit = 0,
                                         int end_bit = sizeof(KeyT) * 8, cudaStream_t stream = 0) {
    static_assert(std::is_arithmetic_v<KeyT>, "the emulated SortPairs takes arithmetic keys");
    return sonata::emu::cub_detail::sort_pairs(
        d_temp_storage, temp_storage_bytes, d_keys_in, d_keys_out, d_values_in, d_values_out,
        int64_t(num_items), sizeof(KeyT), sonata::emu::cub_detail::key_kind<KeyT>(), sizeof(ValueT),
        begin_bit, end_bit, stream, true);
  }
};

}  // namespace cub

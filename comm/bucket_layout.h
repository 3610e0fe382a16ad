#pragma once
// How the reducer groups parameters into buckets (PyTorch's compute_bucket_assignment_by_size):
// walking `order`, each dtype fills its own open bucket, which closes once it holds at least
// its cap in bytes: first_cap for a dtype's first bucket, cap after. Buckets are returned in
// the order they would be complete (by the position of their last parameter in `order`), so
// launching them in index order never waits on a later one.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/tensor.h"

namespace sonata {

std::vector<std::vector<size_t>> assign_buckets(const std::vector<Tensor>& parameters,
                                                const std::vector<size_t>& order, int64_t first_cap,
                                                int64_t cap);

// 64-bit FNV-1a, to compare layouts and parameter lists across ranks with one integer.
class Fnv1a {
 public:
  void add(uint64_t value);
  uint64_t value() const { return hash_; }

 private:
  uint64_t hash_ = 0xcbf29ce484222325ull;
};

}  // namespace sonata

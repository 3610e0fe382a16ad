#pragma once
// Random tensors from a counter-based Philox generator: a Generator is only (seed, offset),
// each call reserves the blocks it uses, and the values depend on nothing else, so CPU and
// CUDA agree and a saved (seed, offset) resumes the exact stream.
#include <cstdint>

#include "engine/tensor.h"

namespace sonata {

class Generator {
 public:
  explicit Generator(uint64_t seed = 0, uint64_t subsequence = 0)
      : seed_(seed), subsequence_(subsequence) {}
  uint64_t seed() const { return seed_; }
  uint64_t subsequence() const { return subsequence_; }
  uint64_t offset() const { return offset_; }
  void set_offset(uint64_t offset) { offset_ = offset; }
  // Reserves the Philox blocks for `count` values; returns the first block's offset.
  uint64_t reserve(int64_t count);

 private:
  uint64_t seed_;
  uint64_t subsequence_;
  uint64_t offset_ = 0;
};

Generator& default_generator();
void manual_seed(uint64_t seed);

Tensor rand(const Shape& shape, const TensorOptions& options = {}, Generator* generator = nullptr);
Tensor randn(const Shape& shape, const TensorOptions& options = {}, Generator* generator = nullptr);
// In place, not recorded by autograd.
Tensor& uniform_(Tensor& t, double low, double high, Generator* generator = nullptr);
Tensor& normal_(Tensor& t, double mean, double std, Generator* generator = nullptr);

}  // namespace sonata

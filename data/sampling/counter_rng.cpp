#include "data/sampling/counter_rng.h"

#include <numeric>
#include <utility>

#include "base/error.h"
#include "base/philox.h"

namespace sonata {

uint64_t CounterRng::next_u64() {
  if (has_spare_) {
    has_spare_ = false;
    return spare_;
  }
  const Philox4 bits = philox_block(seed_, stream_, block_++);
  spare_ = uint64_t(bits.v[2]) | uint64_t(bits.v[3]) << 32;
  has_spare_ = true;
  return uint64_t(bits.v[0]) | uint64_t(bits.v[1]) << 32;
}

uint64_t CounterRng::below(uint64_t bound) {
  SONATA_CHECK(bound >= 1, "CounterRng::below needs a bound of at least 1, got ", bound);
  // 2^64 mod bound words at the bottom would make small results likelier; skip them.
  const uint64_t threshold = (0 - bound) % bound;
  for (;;) {
    const uint64_t x = next_u64();
    if (x >= threshold) return x % bound;
  }
}

double CounterRng::uniform() {
  return double(next_u64() >> 11) * 0x1.0p-53;
}

void shuffle(std::span<int64_t> values, CounterRng& rng) {
  for (size_t i = values.size(); i > 1; --i) std::swap(values[i - 1], values[rng.below(i)]);
}

std::vector<int64_t> permutation(int64_t size, uint64_t seed, uint64_t stream) {
  std::vector<int64_t> values(size_t(size > 0 ? size : 0));
  std::iota(values.begin(), values.end(), int64_t(0));
  CounterRng rng(seed, stream);
  shuffle(values, rng);
  return values;
}

}  // namespace sonata

#pragma once
// The random numbers of the data pipeline: a stream of 64-bit words from Philox4x32-10
// (base/philox.h), a pure function of (seed, stream, position). Samplers and augmentations
// built on it need no saved state: (seed, epoch) or (seed, item key) recreates every draw,
// after a resume and on any thread. std::shuffle and the std:: distributions are avoided on
// purpose: their results differ between standard libraries, and a run must not.
//
// Word w of a stream is lanes (0 | 1 << 32) or (2 | 3 << 32) of Philox block
// first_block + w / 2, with the Philox key = seed and counter = (block, stream). Bounded
// draws reject x < 2^64 mod bound and return x mod bound, so they are exactly uniform and
// consume a known, platform-free number of words.
#include <cstdint>
#include <span>
#include <vector>

namespace sonata {

class CounterRng {
 public:
  CounterRng(uint64_t seed, uint64_t stream, uint64_t first_block = 0)
      : seed_(seed), stream_(stream), block_(first_block) {}

  uint64_t next_u64();
  // Uniform in [0, bound); bound must be at least 1.
  uint64_t below(uint64_t bound);
  // Uniform in [0, 1) with 53 random bits (exact, so the same everywhere).
  double uniform();
  // Uniform in [low, high).
  double uniform(double low, double high) { return low + (high - low) * uniform(); }

 private:
  uint64_t seed_, stream_, block_;
  uint64_t spare_ = 0;  // the block's second word, when has_spare_
  bool has_spare_ = false;
};

// Fisher-Yates (Durstenfeld): for i from size - 1 down to 1, swap values[i] with
// values[rng.below(i + 1)].
void shuffle(std::span<int64_t> values, CounterRng& rng);

// 0 .. size - 1 shuffled by a fresh CounterRng(seed, stream).
std::vector<int64_t> permutation(int64_t size, uint64_t seed, uint64_t stream);

}  // namespace sonata

#pragma once
// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11).
// Counter-based: the output is a pure function of (key, counter), so CPU and CUDA produce
// the same bits for the same (seed, subsequence, offset) in any order and any thread count.
#include <cstdint>

#include "base/hd.h"

namespace sonata {

struct Philox4 {
  uint32_t v[4];
};

SONATA_HD uint32_t philox_mulhi(uint32_t a, uint32_t b) {
  return uint32_t((uint64_t(a) * uint64_t(b)) >> 32);
}

// The raw block function on a 128-bit counter and a 64-bit key.
SONATA_HD Philox4 philox4x32_10(Philox4 counter, uint32_t key0, uint32_t key1) {
  constexpr uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;
  constexpr uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;
  uint32_t c0 = counter.v[0], c1 = counter.v[1], c2 = counter.v[2], c3 = counter.v[3];
  for (int round = 0; round < 10; ++round) {
    const uint32_t hi0 = philox_mulhi(kMul0, c0), lo0 = kMul0 * c0;
    const uint32_t hi1 = philox_mulhi(kMul1, c2), lo1 = kMul1 * c2;
    c0 = hi1 ^ c1 ^ key0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ key1;
    c3 = lo0;
    key0 += kWeyl0;
    key1 += kWeyl1;
  }
  return Philox4{{c0, c1, c2, c3}};
}

// Block number `offset` of stream `subsequence` under `seed`.
SONATA_HD Philox4 philox_block(uint64_t seed, uint64_t subsequence, uint64_t offset) {
  return philox4x32_10(Philox4{{uint32_t(offset), uint32_t(offset >> 32), uint32_t(subsequence),
                                uint32_t(subsequence >> 32)}},
                       uint32_t(seed), uint32_t(seed >> 32));
}

// 24 random bits to a float in [0, 1): exact, so identical on every device.
SONATA_HD float philox_uniform(uint32_t bits) {
  return float(bits >> 8) * 5.9604644775390625e-8f;
}
// The same in (0, 1], for logarithms.
SONATA_HD float philox_uniform_open(uint32_t bits) {
  return float((bits >> 8) + 1u) * 5.9604644775390625e-8f;
}

}  // namespace sonata

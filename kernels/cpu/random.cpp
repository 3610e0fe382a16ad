#include "kernels/cpu/random.h"

#include <cmath>

#include "base/nvtx.h"
#include "base/philox.h"
#include "kernels/cpu/dispatch.h"

namespace sonata::kernels::cpu {
namespace {

template <typename Fill>
void for_each_block(int64_t n, uint64_t seed, uint64_t subsequence, uint64_t offset, Fill&& fill) {
  const int64_t blocks = (n + 3) / 4;
#pragma omp parallel for schedule(static) if (n >= (1 << 15))
  for (int64_t blk = 0; blk < blocks; ++blk) {
    const Philox4 bits = philox_block(seed, subsequence, offset + uint64_t(blk));
    for (int lane = 0; lane < 4 && blk * 4 + lane < n; ++lane) fill(blk * 4 + lane, bits, lane);
  }
}

}  // namespace

void uniform(DType dtype, void* out, int64_t n, uint64_t seed, uint64_t subsequence,
             uint64_t offset, double low, double high) {
  SONATA_NVTX_RANGE("sonata::cpu::uniform");
  dispatch_all(dtype, [&]<typename T>() {
    using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
    T* dst = static_cast<T*>(out);
    const C lo = C(low), span = C(high - low);
    for_each_block(n, seed, subsequence, offset, [&](int64_t e, const Philox4& bits, int lane) {
      dst[e] = store<T>(compute_t<T>(lo + span * C(philox_uniform(bits.v[lane]))));
    });
  });
}

void normal(DType dtype, void* out, int64_t n, uint64_t seed, uint64_t subsequence, uint64_t offset,
            double mean, double std) {
  SONATA_NVTX_RANGE("sonata::cpu::normal");
  dispatch_all(dtype, [&]<typename T>() {
    using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
    T* dst = static_cast<T*>(out);
    const C mu = C(mean), sigma = C(std), two_pi = C(6.283185307179586);
    for_each_block(n, seed, subsequence, offset, [&](int64_t e, const Philox4& bits, int lane) {
      const int pair = lane & 2;  // lanes (0,1) and (2,3) make one Box-Muller pair each
      const C radius = std::sqrt(C(-2) * std::log(C(philox_uniform_open(bits.v[pair]))));
      const C angle = two_pi * C(philox_uniform(bits.v[pair + 1]));
      const C z = (lane & 1) ? radius * std::sin(angle) : radius * std::cos(angle);
      dst[e] = store<T>(compute_t<T>(mu + sigma * z));
    });
  });
}

}  // namespace sonata::kernels::cpu

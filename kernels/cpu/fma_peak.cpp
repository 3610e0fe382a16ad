#include "kernels/cpu/fma_peak.h"

#include <cstdint>
#include <utility>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "kernels/cpu/capability_region.h"

SONATA_CPU_BEGIN
namespace {

#if SONATA_CPU_CAPABILITY == 2
// 24 chains of 16 lanes: 24 of the 32 zmm registers, three times the 8 in flight that two
// 512-bit FMA pipes of latency 4 need (Skylake-SP, Zen 5); Zen 4 splits each into two
// 256-bit halves and needs fewer.
struct Isa {
  using Vec = __m512;
  static constexpr int kChains = 24, kLanes = 16;
  static Vec broadcast(float value) { return _mm512_set1_ps(value); }
  static Vec multiply_add(Vec a, Vec b, Vec c) { return _mm512_fmadd_ps(a, b, c); }
};
#elif SONATA_CPU_CAPABILITY == 1
// 12 chains of 8 lanes: 12 of the 16 ymm registers (the multiplier and the addend take two),
// above the 8 that two 256-bit FMA pipes of latency 4 keep busy.
struct Isa {
  using Vec = __m256;
  static constexpr int kChains = 12, kLanes = 8;
  static Vec broadcast(float value) { return _mm256_set1_ps(value); }
  static Vec multiply_add(Vec a, Vec b, Vec c) { return _mm256_fmadd_ps(a, b, c); }
};
#else
// The baseline (x86-64-v2, or another architecture) has no fused multiply-add: a multiply and
// an add on 4 lanes count as one multiply-add each, as a baseline kernel would do them.
struct Isa {
  using Vec = float __attribute__((vector_size(16)));
  static constexpr int kChains = 12, kLanes = 4;
  static Vec broadcast(float value) { return Vec{value, value, value, value}; }
  static Vec multiply_add(Vec a, Vec b, Vec c) { return a * b + c; }
};
#endif

// Every chain is acc = acc * 0.5 + 1 (it settles at 2: no overflow, no subnormal slowing the
// pipes); the chains are independent, so the pipes can start one FMA of each every cycle.
// The fold expression writes each chain's FMA out, so even a -O1 build keeps the chains in
// registers instead of a loop over an array.
template <size_t... Chain>
float run_chains(int64_t iterations, std::index_sequence<Chain...>) {
  // volatile: the compiler must not fold the settled value into a constant.
  volatile float half = 0.5f, one = 1.0f;
  const typename Isa::Vec multiplier = Isa::broadcast(half), addend = Isa::broadcast(one);
  typename Isa::Vec chains[sizeof...(Chain)] = {Isa::broadcast(float(Chain))...};
  for (int64_t i = 0; i < iterations; ++i)
    ((chains[Chain] = Isa::multiply_add(chains[Chain], multiplier, addend)), ...);
  typename Isa::Vec total = Isa::broadcast(0.0f);
  ((total = total + chains[Chain]), ...);
  // Lane by lane: GCC 12's _mm512_reduce_add_ps warns of an uninitialised vector inside.
  float sum = 0;
  for (int lane = 0; lane < Isa::kLanes; ++lane) sum += total[lane];
  return sum;
}

}  // namespace

int64_t fma_chains_per_iteration() {
  return int64_t(Isa::kChains) * Isa::kLanes;
}

float fma_chains(int64_t iterations) {
  return run_chains(iterations, std::make_index_sequence<Isa::kChains>{});
}

SONATA_CPU_END

#if SONATA_CPU_ENTRY_POINTS
// The public functions: each runs the active capability's copy.
namespace sonata::kernels::cpu {

SONATA_CPU_DECLARE(fma_chains_per_iteration)
SONATA_CPU_DECLARE(fma_chains)

int64_t fma_chains_per_iteration() {
  return SONATA_CPU_CALL(fma_chains_per_iteration)();
}

float fma_chains(int64_t iterations) {
  return SONATA_CPU_CALL(fma_chains)(iterations);
}

}  // namespace sonata::kernels::cpu
#endif

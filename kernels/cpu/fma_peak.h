#pragma once
// The cores' multiply-add ceiling, measured rather than assumed: chains of fused multiply-adds
// on register-resident vectors, with more independent chains than an FMA's latency times the
// number of FMA pipes, so that nothing but the pipes' throughput bounds the loop. Compiled once
// per CPU capability (kernels/cpu/capability_region.h): at avx512 on 512-bit vectors, at avx2
// on 256-bit ones, at the baseline as a multiply and an add on 128-bit ones (x86-64-v2 has no
// FMA). The benchmarks time it (bench/fma_peak.h) and read every kernel's rate against it.
#include <cstdint>

namespace sonata::kernels::cpu {

// Multiply-adds (one per float lane) one fma_chains iteration does at the active capability.
int64_t fma_chains_per_iteration();

// Runs `iterations` rounds of fma_chains_per_iteration() multiply-adds on the calling thread
// and returns a value that depends on all of them (so the compiler cannot drop the work).
float fma_chains(int64_t iterations);

}  // namespace sonata::kernels::cpu

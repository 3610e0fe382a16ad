#pragma once
// Launchers of the executor's self-test kernels (tests/emu/kernels/*.cu, compiled with the
// kernel flags); each returns launch_kernel's result. "bad" kernels carry one planted
// defect, their twins ("good") do the same work correctly.
#include <cuda_runtime.h>

#include <cstdint>

namespace sonata::emu::test {

// Grid-stride scale: x[i] *= factor.
cudaError_t scale(float* x, int n, float factor, dim3 grid, dim3 block);

// Memory checks.
cudaError_t write_index(int* out, int n, bool guard, dim3 grid, dim3 block);  // oob when !guard
cudaError_t copy(const float* in, float* out, int n);                         // 1 block of n
// out[i] = 2 * __ldg(&in[i]) over 4 blocks of 64 (n = 256): in == out breaks the read-only
// rule. With `write_first`, every thread first writes out[i] and, after a barrier, loads its
// neighbour's element through __ldg (the load after the write).
cudaError_t ldg_double(const float* in, float* out, bool write_first);
// Shared memory.
cudaError_t neighbour_swap(const float* in, float* out, bool barrier);  // 1 block of 64
cudaError_t shared_same_word(int* out, bool only_thread0);              // 1 block of 64
cudaError_t warp_neighbour(const int* in, int* out, bool syncwarp);     // 1 warp
cudaError_t shared_uninit_read(int* out, bool initialise);              // 1 block of 32
// Barriers.
cudaError_t half_block_barrier(int* out, bool all_threads);  // 1 block of 64
cudaError_t barrier_after_exit(int* out);                    // half the block exits first
cudaError_t two_site_barrier(int* out, bool same_site);      // odd/even threads
cudaError_t syncthreads_reductions(const int* predicates, int* out, int threads);
// Warp collectives.
cudaError_t partial_warp_sum(const int* in, int* out, bool mask_matches);  // lanes >= 16 exit
cudaError_t shuffles(const int* in, int* out, int width);  // out[4*lane + {0..3}]: idx,up,down,xor
cudaError_t votes(const int* predicates, unsigned* out);   // ballot, any, all per lane
cudaError_t vote_with_lane_at_barrier(unsigned* out, bool lane0_votes);  // 1 warp
// Atomics.
cudaError_t atomic_counts(int* counter, unsigned long long* wide, float* sum, int* order,
                          int blocks, int threads);
cudaError_t shared_atomic_histogram(const int* in, int* out, int n);  // 1 block of 256
// A block reduction as sonata's kernels write it: warp shuffles, then shared memory.
cudaError_t block_sum(const float* in, float* out, int n, int blocks);
// Shared memory above the static limit (13000 floats) or just under it (12000).
cudaError_t big_shared(float* out, bool too_big);
// Counts the blocks that ran (atomicAdd on counter[0]); then each block writes out of bounds.
cudaError_t fault_in_block_one(int* counter, int* small);
// The grid's extent: one thread per block writes nothing; for limit tests.
cudaError_t empty_kernel(dim3 grid, dim3 block, size_t dynamic_shared = 0);
const void* empty_kernel_address();

}  // namespace sonata::emu::test

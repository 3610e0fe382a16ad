// The executor's self-test kernels, compiled as kernel code (sonata_emu_kernel_sources).
// Each "bad" variant plants one defect of a class compute-sanitizer catches; its twin does
// the same work correctly.
#include "kernels/exec_kernels.h"

#include <cuda_runtime.h>

namespace sonata::emu::test {

#define LAUNCH(kernel, grid, block, shared, ...)                                             \
  ::sonata::emu::launch_kernel(reinterpret_cast<const void*>(&kernel), #kernel, grid, block, \
                               shared, nullptr, [=] { kernel(__VA_ARGS__); })

namespace {

__global__ void scale_kernel(float* x, int n, float factor) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    x[i] *= factor;
}

__global__ void ldg_double_kernel(const float* in, float* out, bool write_first) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (write_first) {
    out[i] = 1.0f;
    __syncthreads();
    const int neighbour = blockIdx.x * blockDim.x + (threadIdx.x + 1) % blockDim.x;
    out[i] = 2.0f * __ldg(&in[neighbour]);
  } else {
    out[i] = 2.0f * __ldg(&in[i]);
  }
}

__global__ void write_index_kernel(int* out, int n, bool guard) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (!guard || i < n) out[i] = i;
}

__global__ void copy_kernel(const float* in, float* out) {
  out[threadIdx.x] = in[threadIdx.x];
}

// A template: its __shared__ array is a COMDAT static, which GCC 12 will not put in a
// section of our own (emu/exec/shared_memory.h says how the executor finds it instead).
template <typename T>
__global__ void neighbour_swap_kernel(const T* in, T* out, bool barrier) {
  __shared__ T tile[64];
  tile[threadIdx.x] = T(0);  // defined first, so the defect shows as the race it is
  __syncthreads();
  tile[threadIdx.x] = in[threadIdx.x];
  if (barrier) __syncthreads();
  out[threadIdx.x] = tile[threadIdx.x ^ 1];
}

__global__ void shared_same_word_kernel(int* out, bool only_thread0) {
  __shared__ int word;
  if (!only_thread0 || threadIdx.x == 0) word = int(threadIdx.x);
  __syncthreads();
  out[threadIdx.x] = word;
}

__global__ void warp_neighbour_kernel(const int* in, int* out, bool syncwarp) {
  __shared__ int lanes[32];
  lanes[threadIdx.x] = 0;
  __syncthreads();
  lanes[threadIdx.x] = in[threadIdx.x];
  if (syncwarp) __syncwarp();
  out[threadIdx.x] = lanes[(threadIdx.x + 1) % 32];
}

__global__ void shared_uninit_read_kernel(int* out, bool initialise) {
  __shared__ int values[32];
  if (initialise) values[threadIdx.x] = int(threadIdx.x);
  __syncthreads();
  out[threadIdx.x] = values[threadIdx.x];
}

__global__ void half_block_barrier_kernel(int* out, bool all_threads) {
  if (all_threads || threadIdx.x < 32) __syncthreads();
  __syncthreads();
  out[threadIdx.x] = 1;
}

__global__ void barrier_after_exit_kernel(int* out) {
  __shared__ int value;
  if (threadIdx.x >= 32) return;
  if (threadIdx.x == 0) value = 7;
  __syncthreads();
  out[threadIdx.x] = value;
}

__global__ void two_site_barrier_kernel(int* out, bool same_site) {
  if (same_site || threadIdx.x % 2 == 0) {
    __syncthreads();
  } else {
    __syncthreads();
  }
  out[threadIdx.x] = 1;
}

__global__ void syncthreads_reductions_kernel(const int* predicates, int* out) {
  const int p = predicates[threadIdx.x];
  const int any = __syncthreads_or(p);
  const int all = __syncthreads_and(p);
  const int count = __syncthreads_count(p);
  out[3 * threadIdx.x + 0] = any;
  out[3 * threadIdx.x + 1] = all;
  out[3 * threadIdx.x + 2] = count;
}

__global__ void partial_warp_sum_kernel(const int* in, int* out, bool mask_matches) {
  if (threadIdx.x >= 16) return;
  int value = in[threadIdx.x];
  const unsigned mask = mask_matches ? 0x0000ffffu : 0xffffffffu;
  for (int offset = 8; offset > 0; offset /= 2) value += __shfl_xor_sync(mask, value, offset);
  out[threadIdx.x] = value;
}

__global__ void shuffles_kernel(const int* in, int* out, int width) {
  const int lane = int(threadIdx.x);
  const int v = in[lane];
  out[4 * lane + 0] = __shfl_sync(0xffffffffu, v, 3, width);
  out[4 * lane + 1] = __shfl_up_sync(0xffffffffu, v, 2, width);
  out[4 * lane + 2] = __shfl_down_sync(0xffffffffu, v, 2, width);
  out[4 * lane + 3] = __shfl_xor_sync(0xffffffffu, v, 5, width);
}

// Lane 0 waits at a barrier while the rest of its warp votes with a full mask.
__global__ void vote_with_lane_at_barrier_kernel(unsigned* out, bool lane0_votes) {
  if (threadIdx.x == 0 && !lane0_votes) {
    __syncthreads();
    return;
  }
  out[threadIdx.x] = __ballot_sync(0xffffffffu, 1);
  if (threadIdx.x == 0) return;
  __syncthreads();
}

__global__ void votes_kernel(const int* predicates, unsigned* out) {
  const int p = predicates[threadIdx.x];
  out[3 * threadIdx.x + 0] = __ballot_sync(0xffffffffu, p);
  out[3 * threadIdx.x + 1] = unsigned(__any_sync(0xffffffffu, p));
  out[3 * threadIdx.x + 2] = unsigned(__all_sync(0xffffffffu, p));
}

__global__ void atomic_counts_kernel(int* counter, unsigned long long* wide, float* sum,
                                     int* order) {
  const int ticket = atomicAdd(counter, 1);
  atomicAdd(wide, 1ull << 33);
  atomicAdd(sum, 1.0f);
  order[blockIdx.x * blockDim.x + threadIdx.x] = ticket;
}

__global__ void shared_atomic_histogram_kernel(const int* in, int* out, int n) {
  __shared__ int bins[8];
  if (threadIdx.x < 8) bins[threadIdx.x] = 0;
  __syncthreads();
  for (int i = threadIdx.x; i < n; i += blockDim.x) atomicAdd(&bins[in[i] % 8], 1);
  __syncthreads();
  if (threadIdx.x < 8) out[threadIdx.x] = bins[threadIdx.x];
}

template <int kThreads>
__device__ __forceinline__ float block_reduce_sum(float value) {
  constexpr int kWarps = kThreads / 32;
  __shared__ float per_warp[kWarps];
  for (int offset = 16; offset > 0; offset /= 2)
    value += __shfl_down_sync(0xffffffffu, value, offset);
  if (threadIdx.x % 32 == 0) per_warp[threadIdx.x / 32] = value;
  __syncthreads();
  value = 0.0f;
  if (threadIdx.x < 32) {
    value = threadIdx.x < kWarps ? per_warp[threadIdx.x] : 0.0f;
    for (int offset = 16; offset > 0; offset /= 2)
      value = __fadd_rn(value, __shfl_xor_sync(0xffffffffu, value, offset));
  }
  __syncthreads();  // per_warp is reused by the next call
  return value;
}

template <int kThreads>
__global__ void __launch_bounds__(kThreads)
    block_sum_kernel(const float* __restrict__ in, float* out, int n) {
  float value = 0.0f;
  for (int i = blockIdx.x * kThreads + threadIdx.x; i < n; i += gridDim.x * kThreads)
    value += __ldg(in + i);
  value = block_reduce_sum<kThreads>(value);
  if (threadIdx.x == 0) out[blockIdx.x] = value;
}

__global__ void big_shared_kernel(float* out, bool too_big) {
  __shared__ float big[13000];
  const int n = too_big ? 13000 : 12000;
  for (int i = threadIdx.x; i < n; i += blockDim.x) big[i] = float(i);
  __syncthreads();
  if (threadIdx.x == 0) out[0] = big[n - 1];
}

__global__ void fault_in_block_one_kernel(int* counter, int* small) {
  if (threadIdx.x == 0) atomicAdd(counter, 1);
  if (threadIdx.x == 0) small[4] = 1;  // small has 4 ints: every block faults
}

__global__ void empty_kernel_kernel() {}

}  // namespace

cudaError_t scale(float* x, int n, float factor, dim3 grid, dim3 block) {
  return LAUNCH(scale_kernel, grid, block, 0, x, n, factor);
}
cudaError_t write_index(int* out, int n, bool guard, dim3 grid, dim3 block) {
  return LAUNCH(write_index_kernel, grid, block, 0, out, n, guard);
}
cudaError_t ldg_double(const float* in, float* out, bool write_first) {
  return LAUNCH(ldg_double_kernel, dim3(4), dim3(64), 0, in, out, write_first);
}
cudaError_t copy(const float* in, float* out, int n) {
  return LAUNCH(copy_kernel, dim3(1), dim3(unsigned(n)), 0, in, out);
}
cudaError_t neighbour_swap(const float* in, float* out, bool barrier) {
  return LAUNCH(neighbour_swap_kernel<float>, dim3(1), dim3(64), 0, in, out, barrier);
}
cudaError_t shared_same_word(int* out, bool only_thread0) {
  return LAUNCH(shared_same_word_kernel, dim3(1), dim3(64), 0, out, only_thread0);
}
cudaError_t warp_neighbour(const int* in, int* out, bool syncwarp) {
  return LAUNCH(warp_neighbour_kernel, dim3(1), dim3(32), 0, in, out, syncwarp);
}
cudaError_t shared_uninit_read(int* out, bool initialise) {
  return LAUNCH(shared_uninit_read_kernel, dim3(1), dim3(32), 0, out, initialise);
}
cudaError_t half_block_barrier(int* out, bool all_threads) {
  return LAUNCH(half_block_barrier_kernel, dim3(1), dim3(64), 0, out, all_threads);
}
cudaError_t barrier_after_exit(int* out) {
  return LAUNCH(barrier_after_exit_kernel, dim3(1), dim3(64), 0, out);
}
cudaError_t two_site_barrier(int* out, bool same_site) {
  return LAUNCH(two_site_barrier_kernel, dim3(1), dim3(64), 0, out, same_site);
}
cudaError_t syncthreads_reductions(const int* predicates, int* out, int threads) {
  return LAUNCH(syncthreads_reductions_kernel, dim3(1), dim3(unsigned(threads)), 0, predicates,
                out);
}
cudaError_t partial_warp_sum(const int* in, int* out, bool mask_matches) {
  return LAUNCH(partial_warp_sum_kernel, dim3(1), dim3(32), 0, in, out, mask_matches);
}
cudaError_t shuffles(const int* in, int* out, int width) {
  return LAUNCH(shuffles_kernel, dim3(1), dim3(32), 0, in, out, width);
}
cudaError_t vote_with_lane_at_barrier(unsigned* out, bool lane0_votes) {
  return LAUNCH(vote_with_lane_at_barrier_kernel, dim3(1), dim3(32), 0, out, lane0_votes);
}
cudaError_t votes(const int* predicates, unsigned* out) {
  return LAUNCH(votes_kernel, dim3(1), dim3(32), 0, predicates, out);
}
cudaError_t atomic_counts(int* counter, unsigned long long* wide, float* sum, int* order,
                          int blocks, int threads) {
  return LAUNCH(atomic_counts_kernel, dim3(unsigned(blocks)), dim3(unsigned(threads)), 0, counter,
                wide, sum, order);
}
cudaError_t shared_atomic_histogram(const int* in, int* out, int n) {
  return LAUNCH(shared_atomic_histogram_kernel, dim3(1), dim3(256), 0, in, out, n);
}
cudaError_t block_sum(const float* in, float* out, int n, int blocks) {
  return LAUNCH(block_sum_kernel<256>, dim3(unsigned(blocks)), dim3(256), 0, in, out, n);
}
cudaError_t big_shared(float* out, bool too_big) {
  return LAUNCH(big_shared_kernel, dim3(1), dim3(256), 0, out, too_big);
}
cudaError_t fault_in_block_one(int* counter, int* small) {
  return LAUNCH(fault_in_block_one_kernel, dim3(4), dim3(32), 0, counter, small);
}
cudaError_t empty_kernel(dim3 grid, dim3 block, size_t dynamic_shared) {
  return LAUNCH(empty_kernel_kernel, grid, block, dynamic_shared);
}
const void* empty_kernel_address() {
  return reinterpret_cast<const void*>(&empty_kernel_kernel);
}

}  // namespace sonata::emu::test

// Philox fills, one thread per Philox block of four elements: element e takes lane e % 4 of
// block offset + e / 4, so every value matches the CPU's (kernels/cpu/random.cpp) for any
// launch shape. The arithmetic mirrors the CPU's expression by expression; the explicit
// round-to-nearest products and sums keep nvcc from fusing them into fmas the host code does
// not use, which makes uniform bitwise equal and normal equal up to the math library's ulps.
#include "kernels/cuda/random.h"

#include "base/nvtx.h"
#include "base/philox.h"
#include "kernels/cuda/launch.cuh"

namespace sonata::kernels::cuda {
namespace {

__device__ __forceinline__ float mul_rn(float a, float b) {
  return __fmul_rn(a, b);
}
__device__ __forceinline__ double mul_rn(double a, double b) {
  return __dmul_rn(a, b);
}
__device__ __forceinline__ float add_rn(float a, float b) {
  return __fadd_rn(a, b);
}
__device__ __forceinline__ double add_rn(double a, double b) {
  return __dadd_rn(a, b);
}

// Writes the block's four values to elements 4 * block ... (those below n): one vector
// store when the block is whole and the output aligned, else element by element.
template <typename T, typename C>
__device__ __forceinline__ void write_block(T* out, int64_t block, int64_t n, bool aligned,
                                            const C (&values)[4]) {
  Pack<T, 4> pack;
#pragma unroll
  for (int lane = 0; lane < 4; ++lane) pack.v[lane] = store<T>(compute_t<T>(values[lane]));
  if constexpr (sizeof(Pack<T, 4>) <= 16) {
    if (aligned && block * 4 + 4 <= n) {
      store_pack<4>(out, block, pack);
      return;
    }
  }
#pragma unroll
  for (int lane = 0; lane < 4; ++lane)
    if (block * 4 + lane < n) out[block * 4 + lane] = pack.v[lane];
}

template <typename T>
__global__ void __launch_bounds__(kBlockSize)
    uniform_kernel(int64_t blocks, T* out, int64_t n, uint64_t seed, uint64_t subsequence,
                   uint64_t offset, float_compute_t<T> low, float_compute_t<T> span, bool aligned) {
  using C = float_compute_t<T>;
  for (int64_t b = thread_index(); b < blocks; b += thread_count()) {
    const Philox4 bits = philox_block(seed, subsequence, offset + uint64_t(b));
    C values[4];
#pragma unroll
    for (int lane = 0; lane < 4; ++lane)
      values[lane] = add_rn(low, mul_rn(span, C(philox_uniform(bits.v[lane]))));
    write_block(out, b, n, aligned, values);
  }
}

// Box-Muller on lanes (0, 1) and (2, 3): radius from the first of a pair, angle from the
// second. Accurate log/sqrt/cos/sin (never the __ intrinsics) to stay near the CPU's values.
template <typename T>
__global__ void __launch_bounds__(kBlockSize)
    normal_kernel(int64_t blocks, T* out, int64_t n, uint64_t seed, uint64_t subsequence,
                  uint64_t offset, float_compute_t<T> mean, float_compute_t<T> stddev,
                  bool aligned) {
  using C = float_compute_t<T>;
  const C two_pi = C(6.283185307179586);
  for (int64_t b = thread_index(); b < blocks; b += thread_count()) {
    const Philox4 bits = philox_block(seed, subsequence, offset + uint64_t(b));
    C values[4];
#pragma unroll
    for (int pair = 0; pair < 4; pair += 2) {
      const C radius = ::sqrt(mul_rn(C(-2), ::log(C(philox_uniform_open(bits.v[pair])))));
      const C angle = mul_rn(two_pi, C(philox_uniform(bits.v[pair + 1])));
      values[pair] = add_rn(mean, mul_rn(stddev, mul_rn(radius, ::cos(angle))));
      values[pair + 1] = add_rn(mean, mul_rn(stddev, mul_rn(radius, ::sin(angle))));
    }
    write_block(out, b, n, aligned, values);
  }
}

}  // namespace

void uniform(DType dtype, void* out, int64_t n, uint64_t seed, uint64_t subsequence,
             uint64_t offset, double low, double high, cudaStream_t stream) {
  SONATA_NVTX_RANGE("sonata::cuda::uniform");
  dispatch_all(dtype, "uniform", [&]<typename T>() {
    using C = float_compute_t<T>;
    T* dst = static_cast<T*>(out);
    // The span is taken in double and then rounded, as on the CPU.
    linear_kernel(uniform_kernel<T>, 0, stream, (n + 3) / 4, dst, n, seed, subsequence, offset,
                  C(low), C(high - low), is_aligned(dst, sizeof(Pack<T, 4>)));
    CUDA_CHECK_LAUNCH();
  });
}

void normal(DType dtype, void* out, int64_t n, uint64_t seed, uint64_t subsequence, uint64_t offset,
            double mean, double std, cudaStream_t stream) {
  SONATA_NVTX_RANGE("sonata::cuda::normal");
  dispatch_all(dtype, "normal", [&]<typename T>() {
    using C = float_compute_t<T>;
    T* dst = static_cast<T*>(out);
    linear_kernel(normal_kernel<T>, 0, stream, (n + 3) / 4, dst, n, seed, subsequence, offset,
                  C(mean), C(std), is_aligned(dst, sizeof(Pack<T, 4>)));
    CUDA_CHECK_LAUNCH();
  });
}

}  // namespace sonata::kernels::cuda

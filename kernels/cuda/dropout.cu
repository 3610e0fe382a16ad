// Dropout: one thread per Philox block of four elements, moved as one pack when the pointers
// allow (as kernels/cuda/random.cu), so each draw serves four elements and the mask is never
// stored.
#include "kernels/cuda/dropout.h"

#include "base/nvtx.h"
#include "base/philox.h"
#include "kernels/cuda/launch.cuh"

namespace sonata::kernels::cuda {
namespace {

template <typename T>
__global__ void __launch_bounds__(kBlockSize)
    dropout_kernel(int64_t blocks, const T* x, T* y, int64_t n, float threshold,
                   float_compute_t<T> scale, uint64_t seed, uint64_t subsequence, uint64_t offset,
                   bool packed) {
  using C = float_compute_t<T>;
  for (int64_t b = thread_index(); b < blocks; b += thread_count()) {
    const Philox4 bits = philox_block(seed, subsequence, offset + uint64_t(b));
    C factor[4];
#pragma unroll
    for (int lane = 0; lane < 4; ++lane)
      factor[lane] = philox_uniform(bits.v[lane]) >= threshold ? scale : C(0);
    if constexpr (sizeof(Pack<T, 4>) <= 16) {
      if (packed && b * 4 + 4 <= n) {
        const Pack<T, 4> in = load_pack<4>(x, b);
        Pack<T, 4> out;
#pragma unroll
        for (int lane = 0; lane < 4; ++lane)
          out.v[lane] = store<T>(C(load(in.v[lane])) * factor[lane]);
        store_pack<4>(y, b, out);
        continue;
      }
    }
    for (int lane = 0; lane < 4 && b * 4 + lane < n; ++lane)
      y[b * 4 + lane] = store<T>(C(load(x[b * 4 + lane])) * factor[lane]);
  }
}

}  // namespace

void dropout(DType dtype, const void* x, void* y, int64_t n, double p, double scale, uint64_t seed,
             uint64_t subsequence, uint64_t offset, cudaStream_t stream) {
  SONATA_NVTX_RANGE("sonata::cuda::dropout");
  dispatch_f16_bf16_f32_f64(dtype, "dropout", [&]<typename T>() {
    using C = float_compute_t<T>;
    const bool packed = is_aligned(x, sizeof(Pack<T, 4>)) && is_aligned(y, sizeof(Pack<T, 4>));
    linear_kernel(dropout_kernel<T>, 0, stream, (n + 3) / 4, static_cast<const T*>(x),
                  static_cast<T*>(y), n, float(p), C(scale), seed, subsequence, offset, packed);
    CUDA_CHECK_LAUNCH();
  });
}

}  // namespace sonata::kernels::cuda

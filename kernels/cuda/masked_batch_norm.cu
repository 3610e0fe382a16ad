// Masked (valid-length) batch normalisation kernels. The per-channel reductions run one
// block per channel over that channel's valid values, two passes for the statistics (mean,
// then squared deviations), each thread's partial merged in a fixed order: simple and
// deterministic. DS2's convolutions have few channels (8 to 32) of a few hundred thousand
// values, so this leaves most of a large GPU idle during the reduction; splitting each
// channel over blocks as kernels/cuda/batch_norm.cu does is the next step if it shows up in
// a profile. The elementwise passes are one thread per element.
#include "kernels/cuda/masked_batch_norm.h"

#include <algorithm>

#include "base/nvtx.h"
#include "kernels/cuda/launch.cuh"

namespace sonata::kernels::cuda {
namespace {

constexpr int kReduceThreads = 256;
constexpr int kReduceWarps = kReduceThreads / kWarpSize;
constexpr unsigned kMaxGrid = 65535;

unsigned channel_blocks(int64_t channels) {
  return unsigned(std::min<int64_t>(channels, kMaxGrid));
}

template <typename A>
__device__ __forceinline__ A param(const A* values, int64_t c, A fallback) {
  return values ? values[c] : fallback;
}

// Every thread gets the block's sum, added in warp order (the same bits everywhere). Called
// by every thread of the block the same number of times.
template <typename A>
__device__ A block_sum(A value) {
  __shared__ A per_warp[kReduceWarps];
  const int warp = int(threadIdx.x) / kWarpSize, lane = int(threadIdx.x) % kWarpSize;
  value = warp_allreduce(value, [](A a, A b) { return a + b; });
  if (lane == 0) per_warp[warp] = value;
  __syncthreads();
  A total = A(0);
  for (int w = 0; w < kReduceWarps; ++w) total += per_warp[w];
  __syncthreads();  // per_warp is reused by the next call
  return total;
}

// visit(at) for each valid element of channel c, at its offset in the whole block; the
// block's threads share the channel's (sample, frame) rows.
template <typename Visit>
__device__ __forceinline__ void for_valid_values(const SequenceLayout& layout,
                                                 const int64_t* lengths, int64_t c, Visit&& visit) {
  const int64_t plane = layout.plane();
  const int64_t units = layout.batch * plane;
  for (int64_t u = threadIdx.x; u < units; u += blockDim.x) {
    const int64_t n = u / plane, k = u - n * plane;
    if (k / layout.inner < lengths[n]) visit((n * layout.channels + c) * plane + k);
  }
}

template <typename T>
__global__ void __launch_bounds__(kReduceThreads)
    statistics_kernel(const T* x, const int64_t* lengths, SequenceLayout layout,
                      float_compute_t<T> count, float_compute_t<T> eps, float_compute_t<T> momentum,
                      float_compute_t<T>* running_mean, float_compute_t<T>* running_var,
                      float_compute_t<T>* mean, float_compute_t<T>* invstd) {
  using A = float_compute_t<T>;
  for (int64_t c = blockIdx.x; c < layout.channels; c += gridDim.x) {
    A sum = A(0);
    for_valid_values(layout, lengths, c, [&](int64_t at) { sum += A(load(x[at])); });
    const A mu = block_sum(sum) / count;
    A squares = A(0);
    for_valid_values(layout, lengths, c, [&](int64_t at) {
      const A d = A(load(x[at])) - mu;
      squares += d * d;
    });
    const A m2 = block_sum(squares);
    if (threadIdx.x == 0) {
      mean[c] = mu;
      invstd[c] = A(1) / sqrt(m2 / count + eps);
      if (running_mean) {
        running_mean[c] = (A(1) - momentum) * running_mean[c] + momentum * mu;
        running_var[c] = (A(1) - momentum) * running_var[c] + momentum * (m2 / (count - A(1)));
      }
    }
  }
}

template <typename T>
__global__ void __launch_bounds__(kReduceThreads)
    backward_reduce_kernel(const T* grad_y, const T* x, const int64_t* lengths,
                           SequenceLayout layout, const float_compute_t<T>* mean,
                           const float_compute_t<T>* invstd, float_compute_t<T>* sum_dy,
                           float_compute_t<T>* sum_dy_xhat) {
  using A = float_compute_t<T>;
  for (int64_t c = blockIdx.x; c < layout.channels; c += gridDim.x) {
    const A mu = mean[c];
    A dy_total = A(0), dy_centered = A(0);
    for_valid_values(layout, lengths, c, [&](int64_t at) {
      const A dy = A(load(grad_y[at]));
      dy_total += dy;
      dy_centered += dy * (A(load(x[at])) - mu);
    });
    dy_total = block_sum(dy_total);
    dy_centered = block_sum(dy_centered);
    if (threadIdx.x == 0) {
      sum_dy[c] = dy_total;
      sum_dy_xhat[c] = dy_centered * invstd[c];
    }
  }
}

template <typename T>
__global__ void __launch_bounds__(kBlockSize)
    apply_kernel(int64_t total, const T* x, const int64_t* lengths, SequenceLayout layout,
                 const float_compute_t<T>* mean, const float_compute_t<T>* invstd,
                 const float_compute_t<T>* weight, const float_compute_t<T>* bias, T* y) {
  using A = float_compute_t<T>;
  for (int64_t at = thread_index(); at < total; at += thread_count()) {
    if (!layout.valid(at, lengths)) {
      y[at] = store<T>(A(0));
      continue;
    }
    const int64_t c = layout.channel(at);
    const A scale = invstd[c] * param(weight, c, A(1));
    y[at] = store<T>((A(load(x[at])) - mean[c]) * scale + param(bias, c, A(0)));
  }
}

template <typename T>
__global__ void __launch_bounds__(kBlockSize)
    backward_input_kernel(int64_t total, const T* grad_y, const T* x, const int64_t* lengths,
                          SequenceLayout layout, const float_compute_t<T>* mean,
                          const float_compute_t<T>* invstd, const float_compute_t<T>* weight,
                          const float_compute_t<T>* sum_dy, const float_compute_t<T>* sum_dy_xhat,
                          float_compute_t<T> count, T* grad_x) {
  using A = float_compute_t<T>;
  for (int64_t at = thread_index(); at < total; at += thread_count()) {
    if (!layout.valid(at, lengths)) {
      grad_x[at] = store<T>(A(0));
      continue;
    }
    const int64_t c = layout.channel(at);
    const A inv = invstd[c], scale = inv * param(weight, c, A(1));
    const A mean_dy = sum_dy ? sum_dy[c] / count : A(0);
    const A mean_dy_xhat = sum_dy ? sum_dy_xhat[c] / count : A(0);
    const A x_hat = (A(load(x[at])) - mean[c]) * inv;
    grad_x[at] = store<T>(scale * (A(load(grad_y[at])) - mean_dy - x_hat * mean_dy_xhat));
  }
}

}  // namespace

void masked_batch_norm_statistics(DType dtype, const void* x, const int64_t* lengths,
                                  SequenceLayout layout, int64_t count, double eps, double momentum,
                                  void* running_mean, void* running_var, void* mean, void* invstd,
                                  cudaStream_t stream) {
  SONATA_NVTX_RANGE("sonata::cuda::masked_batch_norm_statistics");
  if (layout.channels <= 0) return;
  dispatch_f16_bf16_f32_f64(dtype, "masked_batch_norm_statistics", [&]<typename T>() {
    using A = float_compute_t<T>;
    launch(statistics_kernel<T>, dim3(channel_blocks(layout.channels)), dim3(kReduceThreads), 0,
           stream, static_cast<const T*>(x), lengths, layout, A(count), A(eps), A(momentum),
           static_cast<A*>(running_mean), static_cast<A*>(running_var), static_cast<A*>(mean),
           static_cast<A*>(invstd));
    CUDA_CHECK_LAUNCH();
  });
}

void masked_batch_norm_apply(DType dtype, const void* x, const int64_t* lengths, const void* mean,
                             const void* invstd, const void* weight, const void* bias,
                             SequenceLayout layout, void* y, cudaStream_t stream) {
  SONATA_NVTX_RANGE("sonata::cuda::masked_batch_norm_apply");
  dispatch_f16_bf16_f32_f64(dtype, "masked_batch_norm_apply", [&]<typename T>() {
    using A = float_compute_t<T>;
    linear_kernel(apply_kernel<T>, 0, stream, layout.numel(), static_cast<const T*>(x), lengths,
                  layout, static_cast<const A*>(mean), static_cast<const A*>(invstd),
                  static_cast<const A*>(weight), static_cast<const A*>(bias), static_cast<T*>(y));
    CUDA_CHECK_LAUNCH();
  });
}

void masked_batch_norm_backward_reduce(DType dtype, const void* grad_y, const void* x,
                                       const int64_t* lengths, const void* mean, const void* invstd,
                                       SequenceLayout layout, void* sum_dy, void* sum_dy_xhat,
                                       cudaStream_t stream) {
  SONATA_NVTX_RANGE("sonata::cuda::masked_batch_norm_backward_reduce");
  if (layout.channels <= 0) return;
  dispatch_f16_bf16_f32_f64(dtype, "masked_batch_norm_backward_reduce", [&]<typename T>() {
    using A = float_compute_t<T>;
    launch(backward_reduce_kernel<T>, dim3(channel_blocks(layout.channels)), dim3(kReduceThreads),
           0, stream, static_cast<const T*>(grad_y), static_cast<const T*>(x), lengths, layout,
           static_cast<const A*>(mean), static_cast<const A*>(invstd), static_cast<A*>(sum_dy),
           static_cast<A*>(sum_dy_xhat));
    CUDA_CHECK_LAUNCH();
  });
}

void masked_batch_norm_backward_input(DType dtype, const void* grad_y, const void* x,
                                      const int64_t* lengths, const void* mean, const void* invstd,
                                      const void* weight, const void* sum_dy,
                                      const void* sum_dy_xhat, int64_t count, SequenceLayout layout,
                                      void* grad_x, cudaStream_t stream) {
  SONATA_NVTX_RANGE("sonata::cuda::masked_batch_norm_backward_input");
  dispatch_f16_bf16_f32_f64(dtype, "masked_batch_norm_backward_input", [&]<typename T>() {
    using A = float_compute_t<T>;
    linear_kernel(backward_input_kernel<T>, 0, stream, layout.numel(),
                  static_cast<const T*>(grad_y), static_cast<const T*>(x), lengths, layout,
                  static_cast<const A*>(mean), static_cast<const A*>(invstd),
                  static_cast<const A*>(weight), static_cast<const A*>(sum_dy),
                  static_cast<const A*>(sum_dy_xhat), A(count), static_cast<T*>(grad_x));
    CUDA_CHECK_LAUNCH();
  });
}

}  // namespace sonata::kernels::cuda

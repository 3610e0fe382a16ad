// Batch norm over [rows, channels] (BatchNorm1d, channels-last), vectorised along the channels.
//
// Blocks of channel vectors x rows (kernels/cuda/channel_vectors.cuh). Each thread keeps its
// channels' per-channel values in registers and walks rows by adding a stride: no division
// per element.
//
// Statistics are shifted sums: each thread adds x - K and (x - K)^2 with K the channel's first
// value (x[0, c], the same for every block), a block adds its threads' sums in a fixed tree,
// and turns them into one (count, mean, m2) per channel, which batch_norm.cu's finalize merges
// with Chan's formula in a fixed order. Shifting by a value of the data keeps the cancellation
// in m2 = S2 - S1^2 / n to (mean - K)^2 / variance, a few units for any K drawn from the
// channel, whatever the mean's size (the "shifted data" algorithm), without the per-element
// division of a Welford update.
#include "kernels/cuda/batch_norm_columns.h"

#include "base/nvtx.h"
#include "kernels/cuda/channel_vectors.cuh"

namespace sonata::kernels::cuda {
namespace {

constexpr int kColumnThreads = kChannelVectorThreads;

template <typename A, int W>
struct Sums {
  A v[W];
};

// Thread (x, 0) ends with the sum over y of every (x, y)'s sums, in a fixed tree. Called by
// every thread the same number of times.
template <typename A, int W>
__device__ Sums<A, W> column_sum(const Sums<A, W>& own) {
  __shared__ Sums<A, W> slots[kColumnThreads];
  const unsigned x = threadIdx.x, y = threadIdx.y, tx = blockDim.x, ty = blockDim.y;
  slots[y * tx + x] = own;
  __syncthreads();
  unsigned span = 1;
  while (span < ty) span <<= 1;
  for (unsigned half = span / 2; half > 0; half /= 2) {
    if (y < half && y + half < ty) {
      Sums<A, W> merged = slots[y * tx + x];
      const Sums<A, W>& other = slots[(y + half) * tx + x];
#pragma unroll
      for (int k = 0; k < W; ++k) merged.v[k] += other.v[k];
      slots[y * tx + x] = merged;
    }
    __syncthreads();
  }
  // Only thread (x, 0) reads or writes slot (x, 0), and the other slots are read before the
  // last barrier: the next call may write them without one more barrier.
  return y == 0 ? slots[x] : own;
}

// Rows [begin, end) of run blockIdx.x of `splits`.
__device__ __forceinline__ int64_t run_begin(int64_t rows, int64_t run, int splits) {
  return rows * run / splits;
}

// values[first, first + V), or `fallback` for a null array, in 16-byte packs where the
// address allows (neighbouring lanes then read whole sectors; a load per channel would read 4
// or 8 bytes of each lane's sector).
template <int V, typename A>
__device__ __forceinline__ void load_params(const A* values, int64_t first, A fallback,
                                            A (&out)[V]) {
  constexpr int kPerPack = int(16 / sizeof(A));
  if (!values) {
#pragma unroll
    for (int k = 0; k < V; ++k) out[k] = fallback;
    return;
  }
  if constexpr (V % kPerPack == 0) {
    if (reinterpret_cast<uintptr_t>(values + first) % 16 == 0) {
#pragma unroll
      for (int j = 0; j < V / kPerPack; ++j) {
        const Pack<A, kPerPack> pack = load_pack<kPerPack>(values + first, j);
#pragma unroll
        for (int k = 0; k < kPerPack; ++k) out[j * kPerPack + k] = pack.v[k];
      }
      return;
    }
  }
#pragma unroll
  for (int k = 0; k < V; ++k) out[k] = values[first + k];
}

// ---------------------------------------------------------------------------------------
// Forward statistics

template <typename T, int V>
__global__ void __launch_bounds__(kColumnThreads)
    statistics_kernel(const T* x, int64_t rows, int64_t vectors, int splits,
                      float_compute_t<T>* partial) {
  using A = float_compute_t<T>;
  const int64_t channels = vectors * V, slots = channels * splits;
  const int64_t begin = run_begin(rows, blockIdx.x, splits);
  const int64_t end = run_begin(rows, blockIdx.x + 1, splits);
  const A count = A(end - begin);
  for (int64_t tile = blockIdx.y; tile * blockDim.x < vectors; tile += gridDim.y) {
    const int64_t vector = tile * blockDim.x + threadIdx.x;
    const bool valid = vector < vectors;
    A shift[V];
    Sums<A, 2 * V> sums{};  // sum (x - K) in v[0, V), sum (x - K)^2 in v[V, 2V)
    if (valid) {
      // This kernel writes only `partial`: the read-only path is allowed.
      const Pack<T, V> first = load_pack_readonly<V>(x, vector);
#pragma unroll
      for (int k = 0; k < V; ++k) shift[k] = A(load(first.v[k]));
      for (int64_t row = begin + threadIdx.y; row < end; row += blockDim.y) {
        const Pack<T, V> in = load_pack_readonly<V>(x, row * vectors + vector);
#pragma unroll
        for (int k = 0; k < V; ++k) {
          const A d = A(load(in.v[k])) - shift[k];
          sums.v[k] += d;
          sums.v[V + k] += d * d;
        }
      }
    }
    sums = column_sum(sums);
    if (valid && threadIdx.y == 0) {
#pragma unroll
      for (int k = 0; k < V; ++k) {
        const A s1 = sums.v[k], m2 = sums.v[V + k] - s1 * (s1 / count);
        const int64_t slot = (vector * V + k) * splits + blockIdx.x;
        partial[slot] = count;  // an empty run (count 0) leaves the merge unchanged
        partial[slots + slot] = count > A(0) ? shift[k] + s1 / count : A(0);
        // Rounding can take m2 a hair below zero for a constant channel (a NaN stays NaN).
        partial[2 * slots + slot] = count > A(0) ? (m2 < A(0) ? A(0) : m2) : A(0);
      }
    }
  }
}

// ---------------------------------------------------------------------------------------
// Backward sums

template <typename T, int V>
__global__ void __launch_bounds__(kColumnThreads)
    backward_sums_kernel(const T* grad_y, const T* x, const T* relu_output,
                         const float_compute_t<T>* mean, int64_t rows, int64_t vectors, int splits,
                         float_compute_t<T>* partial) {
  using A = float_compute_t<T>;
  const int64_t channels = vectors * V, slots = channels * splits;
  const int64_t begin = run_begin(rows, blockIdx.x, splits);
  const int64_t end = run_begin(rows, blockIdx.x + 1, splits);
  for (int64_t tile = blockIdx.y; tile * blockDim.x < vectors; tile += gridDim.y) {
    const int64_t vector = tile * blockDim.x + threadIdx.x;
    const bool valid = vector < vectors;
    Sums<A, 2 * V> sums{};  // sum dy in v[0, V), sum dy * (x - mean) in v[V, 2V)
    if (valid) {
      A mu[V];
      load_params<V>(mean, vector * V, A(0), mu);
      for (int64_t row = begin + threadIdx.y; row < end; row += blockDim.y) {
        const int64_t at = row * vectors + vector;
        // This kernel writes only `partial`: the read-only path is allowed.
        const Pack<T, V> gy = load_pack_readonly<V>(grad_y, at), in = load_pack_readonly<V>(x, at);
        Pack<T, V> relu_y{};
        if (relu_output) relu_y = load_pack_readonly<V>(relu_output, at);
#pragma unroll
        for (int k = 0; k < V; ++k) {
          const bool masked = relu_output && !(A(load(relu_y.v[k])) > A(0));
          const A dy = masked ? A(0) : A(load(gy.v[k]));
          sums.v[k] += dy;
          sums.v[V + k] += dy * (A(load(in.v[k])) - mu[k]);
        }
      }
    }
    sums = column_sum(sums);
    if (valid && threadIdx.y == 0) {
#pragma unroll
      for (int k = 0; k < V; ++k) {
        const int64_t slot = (vector * V + k) * splits + blockIdx.x;
        partial[slot] = sums.v[k];
        partial[slots + slot] = sums.v[V + k];
      }
    }
  }
}

// ---------------------------------------------------------------------------------------
// Elementwise passes: grid (row blocks, channel tiles), each thread one channel vector over
// rows blockIdx.x * ty + threadIdx.y, stepping by gridDim.x * ty.

template <typename T, int V>
__global__ void __launch_bounds__(kColumnThreads)
    apply_kernel(const T* x, const float_compute_t<T>* mean, const float_compute_t<T>* invstd,
                 const float_compute_t<T>* weight, const float_compute_t<T>* bias, int64_t rows,
                 int64_t vectors, bool relu, T* y) {
  using A = float_compute_t<T>;
  const int64_t row_step = int64_t(gridDim.x) * blockDim.y;
  for (int64_t tile = blockIdx.y; tile * blockDim.x < vectors; tile += gridDim.y) {
    const int64_t vector = tile * blockDim.x + threadIdx.x;
    if (vector >= vectors) break;  // no barriers here: idle lanes may leave
    A mu[V], scale[V], shift[V], gamma[V];
    load_params<V>(mean, vector * V, A(0), mu);
    load_params<V>(invstd, vector * V, A(0), scale);
    load_params<V>(weight, vector * V, A(1), gamma);
    load_params<V>(bias, vector * V, A(0), shift);
#pragma unroll
    for (int k = 0; k < V; ++k) scale[k] *= gamma[k];
    for (int64_t row = int64_t(blockIdx.x) * blockDim.y + threadIdx.y; row < rows;
         row += row_step) {
      const int64_t at = row * vectors + vector;
      const Pack<T, V> in = load_pack<V>(x, at);
      Pack<T, V> out;
#pragma unroll
      for (int k = 0; k < V; ++k) {
        const A value = (A(load(in.v[k])) - mu[k]) * scale[k] + shift[k];
        // value < 0, not !(value > 0): ReLU(NaN) is NaN, as PyTorch's (see batch_norm.cu).
        out.v[k] = store<T>(relu && value < A(0) ? A(0) : value);
      }
      store_pack<V>(y, at, out);
    }
  }
}

template <typename T, int V>
__global__ void __launch_bounds__(kColumnThreads)
    backward_input_kernel(const T* grad_y, const T* x, const T* relu_output,
                          const float_compute_t<T>* mean, const float_compute_t<T>* invstd,
                          const float_compute_t<T>* weight, const float_compute_t<T>* sum_dy,
                          const float_compute_t<T>* sum_dy_xhat, float_compute_t<T> count,
                          int64_t rows, int64_t vectors, T* grad_x) {
  using A = float_compute_t<T>;
  const int64_t row_step = int64_t(gridDim.x) * blockDim.y;
  for (int64_t tile = blockIdx.y; tile * blockDim.x < vectors; tile += gridDim.y) {
    const int64_t vector = tile * blockDim.x + threadIdx.x;
    if (vector >= vectors) break;  // no barriers here: idle lanes may leave
    A mu[V], inv[V], scale[V], mean_dy[V], mean_dy_xhat[V];
    load_params<V>(mean, vector * V, A(0), mu);
    load_params<V>(invstd, vector * V, A(0), inv);
    load_params<V>(weight, vector * V, A(1), scale);
    load_params<V>(sum_dy, vector * V, A(0), mean_dy);
    load_params<V>(sum_dy ? sum_dy_xhat : nullptr, vector * V, A(0), mean_dy_xhat);
#pragma unroll
    for (int k = 0; k < V; ++k) {
      scale[k] *= inv[k];
      mean_dy[k] /= count;
      mean_dy_xhat[k] /= count;
    }
    for (int64_t row = int64_t(blockIdx.x) * blockDim.y + threadIdx.y; row < rows;
         row += row_step) {
      const int64_t at = row * vectors + vector;
      const Pack<T, V> gy = load_pack<V>(grad_y, at), in = load_pack<V>(x, at);
      Pack<T, V> relu_y{};
      if (relu_output) relu_y = load_pack<V>(relu_output, at);
      Pack<T, V> out;
#pragma unroll
      for (int k = 0; k < V; ++k) {
        const bool masked = relu_output && !(A(load(relu_y.v[k])) > A(0));
        const A dy = masked ? A(0) : A(load(gy.v[k]));
        const A x_hat = (A(load(in.v[k])) - mu[k]) * inv[k];
        out.v[k] = store<T>(scale[k] * (dy - mean_dy[k] - x_hat * mean_dy_xhat[k]));
      }
      store_pack<V>(grad_x, at, out);
    }
  }
}

}  // namespace

void batch_norm_columns_statistics(DType dtype, const void* x, int64_t rows, int64_t channels,
                                   int splits, void* partial, cudaStream_t stream) {
  if (rows <= 0 || channels <= 0) return;
  dispatch_f16_bf16_f32_f64(dtype, "batch_norm_columns_statistics", [&]<typename T>() {
    with_channel_width<T>(channels, {x}, [&]<int V>() {
      const ChannelVectorBlocks blocks = channel_vector_blocks(channels / V);
      launch(statistics_kernel<T, V>, dim3(unsigned(splits), blocks.tile_grid()), blocks.block(), 0,
             stream, static_cast<const T*>(x), rows, channels / V, splits,
             static_cast<float_compute_t<T>*>(partial));
      CUDA_CHECK_LAUNCH();
    });
  });
}

void batch_norm_columns_backward_sums(DType dtype, const void* grad_y, const void* x,
                                      const void* relu_output, const void* mean, int64_t rows,
                                      int64_t channels, int splits, void* partial,
                                      cudaStream_t stream) {
  if (rows <= 0 || channels <= 0) return;
  dispatch_f16_bf16_f32_f64(dtype, "batch_norm_columns_backward_sums", [&]<typename T>() {
    using A = float_compute_t<T>;
    with_channel_width<T>(channels, {grad_y, x, relu_output}, [&]<int V>() {
      const ChannelVectorBlocks blocks = channel_vector_blocks(channels / V);
      launch(backward_sums_kernel<T, V>, dim3(unsigned(splits), blocks.tile_grid()), blocks.block(),
             0, stream, static_cast<const T*>(grad_y), static_cast<const T*>(x),
             static_cast<const T*>(relu_output), static_cast<const A*>(mean), rows, channels / V,
             splits, static_cast<A*>(partial));
      CUDA_CHECK_LAUNCH();
    });
  });
}

void batch_norm_columns_apply(DType dtype, const void* x, const void* mean, const void* invstd,
                              const void* weight, const void* bias, int64_t rows, int64_t channels,
                              bool relu, void* y, cudaStream_t stream) {
  if (rows <= 0 || channels <= 0) return;
  dispatch_f16_bf16_f32_f64(dtype, "batch_norm_columns_apply", [&]<typename T>() {
    using A = float_compute_t<T>;
    with_channel_width<T>(channels, {x, y}, [&]<int V>() {
      const ChannelVectorBlocks blocks = channel_vector_blocks(channels / V);
      launch(apply_kernel<T, V>, blocks.pass_grid(rows), blocks.block(), 0, stream,
             static_cast<const T*>(x), static_cast<const A*>(mean), static_cast<const A*>(invstd),
             static_cast<const A*>(weight), static_cast<const A*>(bias), rows, channels / V, relu,
             static_cast<T*>(y));
      CUDA_CHECK_LAUNCH();
    });
  });
}

void batch_norm_columns_backward_input(DType dtype, const void* grad_y, const void* x,
                                       const void* relu_output, const void* mean,
                                       const void* invstd, const void* weight, const void* sum_dy,
                                       const void* sum_dy_xhat, int64_t rows, int64_t channels,
                                       void* grad_x, cudaStream_t stream) {
  if (rows <= 0 || channels <= 0) return;
  dispatch_f16_bf16_f32_f64(dtype, "batch_norm_columns_backward_input", [&]<typename T>() {
    using A = float_compute_t<T>;
    with_channel_width<T>(channels, {grad_y, x, relu_output, grad_x}, [&]<int V>() {
      const ChannelVectorBlocks blocks = channel_vector_blocks(channels / V);
      launch(backward_input_kernel<T, V>, blocks.pass_grid(rows), blocks.block(), 0, stream,
             static_cast<const T*>(grad_y), static_cast<const T*>(x),
             static_cast<const T*>(relu_output), static_cast<const A*>(mean),
             static_cast<const A*>(invstd), static_cast<const A*>(weight),
             static_cast<const A*>(sum_dy), static_cast<const A*>(sum_dy_xhat), A(rows), rows,
             channels / V, static_cast<T*>(grad_x));
      CUDA_CHECK_LAUNCH();
    });
  });
}

}  // namespace sonata::kernels::cuda

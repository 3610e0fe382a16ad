// Batch normalisation kernels. The per-channel reductions are split over a grid of
// (splits x channels) blocks, so that a few wide channels (VGG's first layers: 64 channels of
// 64 x 224 x 224) still fill the GPU, then merged by a small finalize kernel, one warp per
// channel, in a fixed order (deterministic results). [rows, channels] inputs (BatchNorm1d,
// channels-last) go to kernels/cuda/batch_norm_columns.cu instead, vectorised along the
// channels (kernels/common/batch_norm_split.h has the split plan). The plane passes walk the
// tensor in 16- or 8-byte packs when every pointer is aligned and planes are whole packs.
#include "kernels/cuda/batch_norm.h"

#include <algorithm>
#include <initializer_list>

#include "base/nvtx.h"
#include "kernels/common/batch_norm_split.h"
#include "kernels/cuda/batch_norm_columns.h"
#include "kernels/cuda/launch.cuh"

namespace sonata::kernels::cuda {
namespace {

constexpr int kReduceThreads = 256;
constexpr int kReduceWarps = kReduceThreads / kWarpSize;
constexpr unsigned kMaxGridY = 65535;

int reduce_splits(int64_t batch, int64_t channels, int64_t spatial) {
  return int(batch_norm_reduce_splits(batch, channels, spatial));
}

dim3 reduce_grid(int splits, int64_t channels) {
  return dim3(unsigned(splits), unsigned(std::min<int64_t>(channels, kMaxGridY)));
}

// A pack of `width` elements needs whole packs per row and operands aligned to the pack.
bool packs_fit(int64_t spatial, int width, size_t bytes,
               std::initializer_list<const void*> pointers) {
  if (spatial % width != 0) return false;
  for (const void* p : pointers)
    if (p && !is_aligned(p, bytes)) return false;
  return true;
}

// Runs body.template operator()<V>() with V the widest pack that fits: 16 bytes, else 8
// (VGG's 14 x 14 planes in f16), else single elements.
template <typename T, typename F>
void with_pack_width(int64_t spatial, std::initializer_list<const void*> pointers, F&& body) {
  constexpr int kWide = kPackWidth<T>, kNarrow = kWide / 2;
  if (packs_fit(spatial, kWide, sizeof(T) * kWide, pointers)) {
    body.template operator()<kWide>();
    return;
  }
  if constexpr (kNarrow > 1) {
    if (packs_fit(spatial, kNarrow, sizeof(T) * kNarrow, pointers)) {
      body.template operator()<kNarrow>();
      return;
    }
  }
  body.template operator()<1>();
}

template <typename A>
__device__ __forceinline__ A param(const A* values, int64_t c, A fallback) {
  return values ? values[c] : fallback;
}

// ---------------------------------------------------------------------------------------
// Reductions to one value per block (thread 0), in a fixed order.

// Welford state; counts are kept in the float type (exact up to 2^24 per partial).
template <typename A>
struct Welford {
  A count, mean, m2;
};

// Chan et al.'s parallel merge.
template <typename A>
__device__ __forceinline__ Welford<A> combine(const Welford<A>& a, const Welford<A>& b) {
  const A count = a.count + b.count;
  if (count == A(0)) return a;
  const A delta = b.mean - a.mean;
  const A share = b.count / count;
  return {count, a.mean + delta * share, a.m2 + b.m2 + delta * delta * a.count * share};
}

template <typename A>
__device__ __forceinline__ Welford<A> shuffle_down(const Welford<A>& s, int offset) {
  return {__shfl_down_sync(kFullWarp, s.count, offset), __shfl_down_sync(kFullWarp, s.mean, offset),
          __shfl_down_sync(kFullWarp, s.m2, offset)};
}

template <typename A>
struct GradSums {
  A dy, dy_centered;  // sum(dy), sum(dy * (x - mean))
};

template <typename A>
__device__ __forceinline__ GradSums<A> combine(const GradSums<A>& a, const GradSums<A>& b) {
  return {a.dy + b.dy, a.dy_centered + b.dy_centered};
}

template <typename A>
__device__ __forceinline__ GradSums<A> shuffle_down(const GradSums<A>& s, int offset) {
  return {__shfl_down_sync(kFullWarp, s.dy, offset),
          __shfl_down_sync(kFullWarp, s.dy_centered, offset)};
}

// Lane 0 ends with the warp's merge (lanes past the end merge garbage nobody reads).
template <typename State>
__device__ __forceinline__ State warp_merge(State s) {
#pragma unroll
  for (int offset = kWarpSize / 2; offset > 0; offset >>= 1)
    s = combine(s, shuffle_down(s, offset));
  return s;
}

// Thread 0 ends with the block's merge. Called by every thread the same number of times.
template <typename State>
__device__ State block_merge(State s) {
  __shared__ State per_warp[kReduceWarps];
  const int warp = int(threadIdx.x) / kWarpSize, lane = int(threadIdx.x) % kWarpSize;
  s = warp_merge(s);
  if (lane == 0) per_warp[warp] = s;
  __syncthreads();
  if (warp == 0) {
    s = lane < kReduceWarps ? per_warp[lane] : State{};
    s = warp_merge(s);
  }
  __syncthreads();  // per_warp is reused by the next channel
  return s;
}

// Block (blockIdx.x of `splits`) of channel c visits a contiguous run of its packs:
// visit(pack_index) with the pack's index into the whole tensor in units of V elements.
template <int V, typename Visit>
__device__ __forceinline__ void for_block_packs(int64_t batch, int64_t channels, int64_t spatial,
                                                int splits, int64_t c, Visit&& visit) {
  const int64_t per_row = spatial / V, units = batch * per_row;
  const int64_t begin = units * blockIdx.x / splits, end = units * (blockIdx.x + 1) / splits;
  for (int64_t u = begin + threadIdx.x; u < end; u += blockDim.x) {
    const int64_t n = u / per_row;
    visit((n * channels + c) * per_row + (u - n * per_row));
  }
}

// ---------------------------------------------------------------------------------------
// Forward statistics

// partial: [3][channels * splits] (count, mean, m2) per block.
template <typename T, int V>
__global__ void __launch_bounds__(kReduceThreads)
    statistics_partial_kernel(const T* x, int64_t batch, int64_t channels, int64_t spatial,
                              int splits, float_compute_t<T>* partial) {
  using A = float_compute_t<T>;
  const int64_t slots = channels * splits;
  for (int64_t c = blockIdx.y; c < channels; c += gridDim.y) {
    Welford<A> state{};
    for_block_packs<V>(batch, channels, spatial, splits, c, [&](int64_t at) {
      const Pack<T, V> pack = load_pack_readonly<V>(x, at);  // writes only `partial`
      // Two-pass statistics of the pack in registers, then one merge (one division).
      A sum = A(0);
#pragma unroll
      for (int k = 0; k < V; ++k) sum += A(load(pack.v[k]));
      const A pack_mean = sum / A(V);
      A m2 = A(0);
#pragma unroll
      for (int k = 0; k < V; ++k) {
        const A d = A(load(pack.v[k])) - pack_mean;
        m2 += d * d;
      }
      state = combine(state, Welford<A>{A(V), pack_mean, m2});
    });
    state = block_merge(state);
    if (threadIdx.x == 0) {
      const int64_t slot = c * splits + blockIdx.x;
      partial[slot] = state.count;
      partial[slots + slot] = state.mean;
      partial[2 * slots + slot] = state.m2;
    }
  }
}

// One warp per channel merges its partials, writes mean / invstd, updates the running stats.
template <typename A>
__global__ void __launch_bounds__(kBlockSize)
    statistics_finalize_kernel(int64_t channels, int splits, const A* partial, A eps, A momentum,
                               A* running_mean, A* running_var, A* mean, A* invstd) {
  const int lane = int(threadIdx.x) % kWarpSize;
  const int64_t warps = int64_t(gridDim.x) * (blockDim.x / kWarpSize);
  const int64_t slots = channels * splits;
  for (int64_t c = thread_index() / kWarpSize; c < channels; c += warps) {
    Welford<A> state{};
    for (int i = lane; i < splits; i += kWarpSize) {
      const int64_t slot = c * splits + i;
      state = combine(state,
                      Welford<A>{partial[slot], partial[slots + slot], partial[2 * slots + slot]});
    }
    state = warp_merge(state);
    if (lane == 0) {
      mean[c] = state.mean;
      invstd[c] = A(1) / sqrt(state.m2 / state.count + eps);
      if (running_mean) {
        running_mean[c] = (A(1) - momentum) * running_mean[c] + momentum * state.mean;
        running_var[c] =
            (A(1) - momentum) * running_var[c] + momentum * (state.m2 / (state.count - A(1)));
      }
    }
  }
}

// ---------------------------------------------------------------------------------------
// Elementwise passes, one thread per pack of V elements.

template <typename T, int V>
__global__ void __launch_bounds__(kBlockSize)
    apply_kernel(int64_t packs, const T* x, const float_compute_t<T>* mean,
                 const float_compute_t<T>* invstd, const float_compute_t<T>* weight,
                 const float_compute_t<T>* bias, int64_t channels, int64_t per_row, bool relu,
                 T* y) {
  using A = float_compute_t<T>;
  for (int64_t q = thread_index(); q < packs; q += thread_count()) {
    const int64_t c = (q / per_row) % channels;
    const A mu = mean[c], scale = invstd[c] * param(weight, c, A(1)), shift = param(bias, c, A(0));
    const Pack<T, V> in = load_pack<V>(x, q);
    Pack<T, V> out;
#pragma unroll
    for (int k = 0; k < V; ++k) {
      const A value = (A(load(in.v[k])) - mu) * scale + shift;
      // value < 0, not !(value > 0): ReLU(NaN) is NaN, as PyTorch's, so a NaN reaches the loss
      // scaler and the bad-step check instead of being hidden as 0.
      out.v[k] = store<T>(relu && value < A(0) ? A(0) : value);
    }
    store_pack<V>(y, q, out);
  }
}

template <typename T, int V>
__global__ void __launch_bounds__(kBlockSize)
    backward_input_kernel(int64_t packs, const T* grad_y, const T* x, const T* relu_output,
                          const float_compute_t<T>* mean, const float_compute_t<T>* invstd,
                          const float_compute_t<T>* weight, const float_compute_t<T>* sum_dy,
                          const float_compute_t<T>* sum_dy_xhat, float_compute_t<T> count,
                          int64_t channels, int64_t per_row, T* grad_x) {
  using A = float_compute_t<T>;
  for (int64_t q = thread_index(); q < packs; q += thread_count()) {
    const int64_t c = (q / per_row) % channels;
    const A mu = mean[c], inv = invstd[c], scale = inv * param(weight, c, A(1));
    const A mean_dy = sum_dy ? sum_dy[c] / count : A(0);
    const A mean_dy_xhat = sum_dy ? sum_dy_xhat[c] / count : A(0);
    const Pack<T, V> gy = load_pack<V>(grad_y, q), in = load_pack<V>(x, q);
    Pack<T, V> relu_y{};
    if (relu_output) relu_y = load_pack<V>(relu_output, q);
    Pack<T, V> out;
#pragma unroll
    for (int k = 0; k < V; ++k) {
      const bool masked = relu_output && !(A(load(relu_y.v[k])) > A(0));
      const A dy = masked ? A(0) : A(load(gy.v[k]));
      const A x_hat = (A(load(in.v[k])) - mu) * inv;
      out.v[k] = store<T>(scale * (dy - mean_dy - x_hat * mean_dy_xhat));
    }
    store_pack<V>(grad_x, q, out);
  }
}

// ---------------------------------------------------------------------------------------
// Backward reduction

// partial: [2][channels * splits] (sum dy, sum dy * (x - mean)) per block.
template <typename T, int V>
__global__ void __launch_bounds__(kReduceThreads)
    backward_partial_kernel(const T* grad_y, const T* x, const T* relu_output,
                            const float_compute_t<T>* mean, int64_t batch, int64_t channels,
                            int64_t spatial, int splits, float_compute_t<T>* partial) {
  using A = float_compute_t<T>;
  const int64_t slots = channels * splits;
  for (int64_t c = blockIdx.y; c < channels; c += gridDim.y) {
    const A mu = mean[c];
    GradSums<A> sums{};
    for_block_packs<V>(batch, channels, spatial, splits, c, [&](int64_t at) {
      // This kernel writes only `partial`: the read-only path is allowed.
      const Pack<T, V> gy = load_pack_readonly<V>(grad_y, at), in = load_pack_readonly<V>(x, at);
      Pack<T, V> relu_y{};
      if (relu_output) relu_y = load_pack_readonly<V>(relu_output, at);
#pragma unroll
      for (int k = 0; k < V; ++k) {
        const bool masked = relu_output && !(A(load(relu_y.v[k])) > A(0));
        const A dy = masked ? A(0) : A(load(gy.v[k]));
        sums.dy += dy;
        sums.dy_centered += dy * (A(load(in.v[k])) - mu);
      }
    });
    sums = block_merge(sums);
    if (threadIdx.x == 0) {
      partial[c * splits + blockIdx.x] = sums.dy;
      partial[slots + c * splits + blockIdx.x] = sums.dy_centered;
    }
  }
}

template <typename A>
__global__ void __launch_bounds__(kBlockSize)
    backward_finalize_kernel(int64_t channels, int splits, const A* partial, const A* invstd,
                             A* sum_dy, A* sum_dy_xhat) {
  const int lane = int(threadIdx.x) % kWarpSize;
  const int64_t warps = int64_t(gridDim.x) * (blockDim.x / kWarpSize);
  const int64_t slots = channels * splits;
  for (int64_t c = thread_index() / kWarpSize; c < channels; c += warps) {
    GradSums<A> sums{};
    for (int i = lane; i < splits; i += kWarpSize)
      sums = combine(sums, GradSums<A>{partial[c * splits + i], partial[slots + c * splits + i]});
    sums = warp_merge(sums);
    if (lane == 0) {
      sum_dy[c] = sums.dy;
      sum_dy_xhat[c] = sums.dy_centered * invstd[c];
    }
  }
}

unsigned warp_per_channel_blocks(int64_t channels) {
  return blocks_for(channels * kWarpSize);
}

}  // namespace

int64_t batch_norm_workspace_size(int64_t batch, int64_t channels, int64_t spatial, cudaStream_t) {
  return 3 * channels * reduce_splits(batch, channels, spatial);
}

void batch_norm_statistics(DType dtype, const void* x, int64_t batch, int64_t channels,
                           int64_t spatial, double eps, double momentum, void* running_mean,
                           void* running_var, void* mean, void* invstd, void* workspace,
                           cudaStream_t stream) {
  SONATA_NVTX_RANGE("sonata::cuda::batch_norm_statistics");
  if (channels <= 0) return;
  const int splits = reduce_splits(batch, channels, spatial);
  dispatch_f16_bf16_f32_f64(dtype, "batch_norm_statistics", [&]<typename T>() {
    using A = float_compute_t<T>;
    A* partial = static_cast<A*>(workspace);
    if (batch_norm_by_columns(spatial)) {
      batch_norm_columns_statistics(dtype, x, batch, channels, splits, partial, stream);
    } else {
      with_pack_width<T>(spatial, {x}, [&]<int V>() {
        launch(statistics_partial_kernel<T, V>, reduce_grid(splits, channels), kReduceThreads, 0,
               stream, static_cast<const T*>(x), batch, channels, spatial, splits, partial);
        CUDA_CHECK_LAUNCH();
      });
    }
    launch(statistics_finalize_kernel<A>, warp_per_channel_blocks(channels), kBlockSize, 0, stream,
           channels, splits, partial, A(eps), A(momentum), static_cast<A*>(running_mean),
           static_cast<A*>(running_var), static_cast<A*>(mean), static_cast<A*>(invstd));
    CUDA_CHECK_LAUNCH();
  });
}

void batch_norm_apply(DType dtype, const void* x, const void* mean, const void* invstd,
                      const void* weight, const void* bias, int64_t batch, int64_t channels,
                      int64_t spatial, bool relu, void* y, cudaStream_t stream) {
  SONATA_NVTX_RANGE("sonata::cuda::batch_norm_apply");
  if (batch_norm_by_columns(spatial))
    return batch_norm_columns_apply(dtype, x, mean, invstd, weight, bias, batch, channels, relu, y,
                                    stream);
  dispatch_f16_bf16_f32_f64(dtype, "batch_norm_apply", [&]<typename T>() {
    using A = float_compute_t<T>;
    with_pack_width<T>(spatial, {x, y}, [&]<int V>() {
      linear_kernel(apply_kernel<T, V>, 0, stream, batch * channels * spatial / V,
                    static_cast<const T*>(x), static_cast<const A*>(mean),
                    static_cast<const A*>(invstd), static_cast<const A*>(weight),
                    static_cast<const A*>(bias), channels, spatial / V, relu, static_cast<T*>(y));
      CUDA_CHECK_LAUNCH();
    });
  });
}

void batch_norm_backward_reduce(DType dtype, const void* grad_y, const void* x,
                                const void* relu_output, const void* mean, const void* invstd,
                                int64_t batch, int64_t channels, int64_t spatial, void* workspace,
                                void* sum_dy, void* sum_dy_xhat, cudaStream_t stream) {
  SONATA_NVTX_RANGE("sonata::cuda::batch_norm_backward_reduce");
  if (channels <= 0) return;
  const int splits = reduce_splits(batch, channels, spatial);
  dispatch_f16_bf16_f32_f64(dtype, "batch_norm_backward_reduce", [&]<typename T>() {
    using A = float_compute_t<T>;
    A* partial = static_cast<A*>(workspace);
    if (batch_norm_by_columns(spatial)) {
      batch_norm_columns_backward_sums(dtype, grad_y, x, relu_output, mean, batch, channels, splits,
                                       partial, stream);
    } else {
      with_pack_width<T>(spatial, {grad_y, x, relu_output}, [&]<int V>() {
        launch(backward_partial_kernel<T, V>, reduce_grid(splits, channels), kReduceThreads, 0,
               stream, static_cast<const T*>(grad_y), static_cast<const T*>(x),
               static_cast<const T*>(relu_output), static_cast<const A*>(mean), batch, channels,
               spatial, splits, partial);
        CUDA_CHECK_LAUNCH();
      });
    }
    launch(backward_finalize_kernel<A>, warp_per_channel_blocks(channels), kBlockSize, 0, stream,
           channels, splits, partial, static_cast<const A*>(invstd), static_cast<A*>(sum_dy),
           static_cast<A*>(sum_dy_xhat));
    CUDA_CHECK_LAUNCH();
  });
}

void batch_norm_backward_input(DType dtype, const void* grad_y, const void* x,
                               const void* relu_output, const void* mean, const void* invstd,
                               const void* weight, const void* sum_dy, const void* sum_dy_xhat,
                               int64_t batch, int64_t channels, int64_t spatial, void* grad_x,
                               cudaStream_t stream) {
  SONATA_NVTX_RANGE("sonata::cuda::batch_norm_backward_input");
  if (batch_norm_by_columns(spatial))
    return batch_norm_columns_backward_input(dtype, grad_y, x, relu_output, mean, invstd, weight,
                                             sum_dy, sum_dy_xhat, batch, channels, grad_x, stream);
  dispatch_f16_bf16_f32_f64(dtype, "batch_norm_backward_input", [&]<typename T>() {
    using A = float_compute_t<T>;
    with_pack_width<T>(spatial, {grad_y, x, relu_output, grad_x}, [&]<int V>() {
      linear_kernel(backward_input_kernel<T, V>, 0, stream, batch * channels * spatial / V,
                    static_cast<const T*>(grad_y), static_cast<const T*>(x),
                    static_cast<const T*>(relu_output), static_cast<const A*>(mean),
                    static_cast<const A*>(invstd), static_cast<const A*>(weight),
                    static_cast<const A*>(sum_dy), static_cast<const A*>(sum_dy_xhat),
                    A(batch * spatial), channels, spatial / V, static_cast<T*>(grad_x));
      CUDA_CHECK_LAUNCH();
    });
  });
}

}  // namespace sonata::kernels::cuda

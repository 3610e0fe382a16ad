// Stable softmax / log_softmax over the middle axis of [outer, n, inner] and their backward
// passes, on the line walkers of lines.cuh. Half types and f32 compute in float, f64 in
// double. The forward reads each line twice (max and sum together, then to write), the
// backward twice (the dot product, then to write); rows whose pointers allow it move in
// 16-byte packs (lines.cuh), others element by element.
#include "kernels/cuda/softmax.h"

#include <cmath>
#include <limits>

#include "base/nvtx.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/lines.cuh"
#include "kernels/cuda/online_softmax.cuh"

namespace sonata::kernels::cuda {
namespace {

template <typename C>
struct Add {
  __device__ C operator()(C a, C b) const { return a + b; }
};

template <typename T>
struct SoftmaxLine {
  const T* in;
  T* out;
  int64_t n;
  bool log;
  bool packed;  // rows in 16-byte packs (rows_fit_packs)

  template <typename AllReduce>
  __device__ void operator()(int64_t, int64_t base, int64_t stride, int first, int step, bool valid,
                             AllReduce allreduce) const {
    using C = compute_t<T>;
    const T* x = in + base;
    T* y = out + base;
    // Max and sum of exponentials in one read (online_softmax.cuh), then one more to write.
    MaxSum<C> stats = MaxSum<C>::empty();
    if (valid)
      for_line_values(x, static_cast<const T*>(nullptr), n, stride, first, step, packed,
                      [&](int64_t, C value, C) { stats.add(value); });
    stats = allreduce(stats, MergeMaxSum<C>{});
    // A line of -inf has sum 0: shifting by 0 then gives 0 / 0 = NaN, the CPU reference's
    // NaN path.
    const C peak = stats.max == -std::numeric_limits<C>::infinity() ? C(0) : stats.max;
    const C total = stats.sum;
    if (!valid) return;
    if (log) {
      // (x - peak) - log(total), never x - (peak + log(total)): in float, 1e4 + log(2)
      // rounds to 10000.6934 and a row [1e4, 1e4] would give -0.69336 for -0.69315.
      const C log_total = ::log(total);
      map_line_values(x, static_cast<const T*>(nullptr), y, n, stride, first, step, packed,
                      [&](int64_t, C value, C) { return (value - peak) - log_total; });
    } else {
      map_line_values(x, static_cast<const T*>(nullptr), y, n, stride, first, step, packed,
                      [&](int64_t, C value, C) { return exp(value - peak) / total; });
    }
  }
};

// softmax: gx = y * (gy - sum(gy * y)); log_softmax: gx = gy - exp(y) * sum(gy).
template <typename T>
struct SoftmaxBackwardLine {
  const T* grad_y;
  const T* y;
  T* grad_x;
  int64_t n;
  bool log;
  bool packed;  // rows in 16-byte packs (rows_fit_packs)

  template <typename AllReduce>
  __device__ void operator()(int64_t, int64_t base, int64_t stride, int first, int step, bool valid,
                             AllReduce allreduce) const {
    using C = compute_t<T>;
    const T* gy = grad_y + base;
    const T* ys = y + base;
    T* gx = grad_x + base;
    C dot = C(0);
    if (valid)
      for_line_values(gy, ys, n, stride, first, step, packed,
                      [&](int64_t, C g, C out) { dot += log ? g : g * out; });
    dot = allreduce(dot, Add<C>{});
    if (!valid) return;
    map_line_values(gy, ys, gx, n, stride, first, step, packed, [&](int64_t, C g, C out) {
      return log ? g - exp(out) * dot : out * (g - dot);
    });
  }
};

}  // namespace

void softmax(DType dtype, bool log, const void* in, void* out, int64_t outer, int64_t n,
             int64_t inner, cudaStream_t stream) {
  SONATA_NVTX_RANGE("sonata::cuda::softmax");
  dispatch_f16_bf16_f32_f64(dtype, "softmax", [&]<typename T>() {
    const bool packed = rows_fit_packs<T>(n, inner, {in, out});
    launch_lines(outer, n, inner, stream,
                 SoftmaxLine<T>{static_cast<const T*>(in), static_cast<T*>(out), n, log, packed});
    CUDA_CHECK_LAUNCH();
  });
}

void softmax_backward(DType dtype, bool log, const void* grad_y, const void* y, void* grad_x,
                      int64_t outer, int64_t n, int64_t inner, cudaStream_t stream) {
  SONATA_NVTX_RANGE("sonata::cuda::softmax_backward");
  dispatch_f16_bf16_f32_f64(dtype, "softmax_backward", [&]<typename T>() {
    const bool packed = rows_fit_packs<T>(n, inner, {grad_y, y, grad_x});
    launch_lines(outer, n, inner, stream,
                 SoftmaxBackwardLine<T>{static_cast<const T*>(grad_y), static_cast<const T*>(y),
                                        static_cast<T*>(grad_x), n, log, packed});
    CUDA_CHECK_LAUNCH();
  });
}

}  // namespace sonata::kernels::cuda

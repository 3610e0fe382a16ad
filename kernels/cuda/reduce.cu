// Sum / max / min and max-with-index over the middle axis of [outer, n, inner], on the line
// reductions of lines.cuh (split over several blocks per line when the lines are few and
// long, then combined in a fixed order). Half types and f32 accumulate in float, f64 in
// double.
#include "kernels/cuda/reduce.h"

#include <limits>
#include <type_traits>

#include "base/nvtx.h"
#include "kernels/common/elementwise_ops.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/lines.cuh"

namespace sonata::kernels::cuda {
namespace {

// Combiners are commutative (and associative up to rounding), so the butterfly and the
// per-warp combination leave every thread of a line with the same result.
template <typename C>
struct Sum {
  using Acc = C;
  __device__ static Acc identity() { return C(0); }
  __device__ static Acc lift(C value, int64_t) { return value; }
  __device__ Acc operator()(Acc a, Acc b) const { return a + b; }
};

// NaN wins, as in torch.max / torch.amax (binary_apply's maximum propagates it).
template <typename C>
struct Max {
  using Acc = C;
  __device__ static Acc identity() { return -std::numeric_limits<C>::infinity(); }
  __device__ static Acc lift(C value, int64_t) { return value; }
  __device__ Acc operator()(Acc a, Acc b) const { return binary_apply(BinaryOp::maximum, a, b); }
};

template <typename C>
struct Min {
  using Acc = C;
  __device__ static Acc identity() { return std::numeric_limits<C>::infinity(); }
  __device__ static Acc lift(C value, int64_t) { return value; }
  __device__ Acc operator()(Acc a, Acc b) const { return binary_apply(BinaryOp::minimum, a, b); }
};

template <typename C>
struct ValueIndex {
  C value;
  int64_t index;
};

template <typename C>
__device__ __forceinline__ ValueIndex<C> shfl_xor(ValueIndex<C> pair, int lane_mask) {
  return {__shfl_xor_sync(kFullWarp, pair.value, lane_mask),
          __shfl_xor_sync(kFullWarp, pair.index, lane_mask)};
}

// The first maximum, NaN counting as the largest value. A total order (ties broken by the
// smaller index), so the result does not depend on how lanes split the line.
template <typename C>
struct ArgMax {
  using Acc = ValueIndex<C>;
  __device__ static Acc identity() {
    return {-std::numeric_limits<C>::infinity(), std::numeric_limits<int64_t>::max()};
  }
  __device__ static Acc lift(C value, int64_t index) { return {value, index}; }
  __device__ Acc operator()(Acc a, Acc b) const {
    const bool a_nan = a.value != a.value, b_nan = b.value != b.value;
    if (a_nan != b_nan) return a_nan ? a : b;
    if (!a_nan && a.value != b.value) return a.value > b.value ? a : b;
    return a.index < b.index ? a : b;
  }
};

// The reducer launch_line_reduction (lines.cuh) walks: loads and lifts elements, combines
// with Reducer, writes the value (and for ArgMax the index) of each line.
template <typename T, typename Reducer>
struct LineReducer {
  using Acc = typename Reducer::Acc;
  const T* in;
  T* out;
  int64_t* indices;  // ArgMax only

  __device__ Acc identity() const { return Reducer::identity(); }
  __device__ Acc lift(int64_t at, int64_t r) const { return Reducer::lift(load(in[at]), r); }
  __device__ Acc combine(Acc a, Acc b) const { return Reducer{}(a, b); }
  __device__ void write(int64_t line, Acc acc) const {
    if constexpr (std::is_same_v<Acc, ValueIndex<compute_t<T>>>) {
      out[line] = store<T>(acc.value);
      indices[line] = acc.index;
    } else {
      out[line] = store<T>(acc);
    }
  }
};

}  // namespace

void reduce(ReduceOp op, DType dtype, const void* in, void* out, int64_t outer, int64_t n,
            int64_t inner, cudaStream_t stream) {
  SONATA_NVTX_RANGE("sonata::cuda::reduce");
  SONATA_CHECK(n > 0 || op == ReduceOp::sum || outer * inner == 0,
               "sonata::cuda::reduce: max/min over an empty dimension");
  dispatch_f16_bf16_f32_f64(dtype, "reduce", [&]<typename T>() {
    using C = compute_t<T>;
    const T* src = static_cast<const T*>(in);
    T* dst = static_cast<T*>(out);
    switch (op) {
      case ReduceOp::sum:
        launch_line_reduction(outer, n, inner, stream, LineReducer<T, Sum<C>>{src, dst, nullptr});
        break;
      case ReduceOp::max:
        launch_line_reduction(outer, n, inner, stream, LineReducer<T, Max<C>>{src, dst, nullptr});
        break;
      case ReduceOp::min:
        launch_line_reduction(outer, n, inner, stream, LineReducer<T, Min<C>>{src, dst, nullptr});
        break;
    }
    CUDA_CHECK_LAUNCH();
  });
}

void max_with_index(DType dtype, const void* in, void* values, int64_t* indices, int64_t outer,
                    int64_t n, int64_t inner, cudaStream_t stream) {
  SONATA_NVTX_RANGE("sonata::cuda::max_with_index");
  SONATA_CHECK(n > 0 || outer * inner == 0,
               "sonata::cuda::max_with_index: max over an empty dimension");
  dispatch_f16_bf16_f32_f64(dtype, "max_with_index", [&]<typename T>() {
    using C = compute_t<T>;
    launch_line_reduction(
        outer, n, inner, stream,
        LineReducer<T, ArgMax<C>>{static_cast<const T*>(in), static_cast<T*>(values), indices});
    CUDA_CHECK_LAUNCH();
  });
}

}  // namespace sonata::kernels::cuda

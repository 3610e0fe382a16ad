#pragma once
// The one elementwise engine behind unary, binary, compare, where, copy and fill:
// out = f(in...) over a StridedLayout. Contiguous operands take a vectorised path (one
// 16-byte access per operand and thread when every pointer is aligned to it, a scalar tail
// for the rest); anything else walks the layout's strides. Included by .cu files only.
#include <cstdint>
#include <utility>

#include "kernels/common/layout.h"
#include "kernels/cuda/launch.cuh"

namespace sonata::kernels::cuda {

// No pointer is __restrict__: in-place ops pass out == x. (nvcc's host stub also cannot take
// the address of a kernel whose restrict-qualified pack mixes types, as where's does.)

// out[i] = f(in[i]...) on contiguous operands, N elements per access. `work_items` is
// ceil(n / N): the grid is sized from it, and the threads past the last full pack take the
// scalar tail.
template <int N, typename F, typename Out, typename... In>
__global__ void __launch_bounds__(kBlockSize)
    map_contiguous_kernel(int64_t work_items, int64_t n, F f, Out* out, const In*... in) {
  const int64_t full_packs = n / N;
  for (int64_t p = thread_index(); p < full_packs; p += thread_count()) {
    const auto compute = [&f](const Pack<In, N>&... packs) {
      Pack<Out, N> result;
#pragma unroll
      for (int k = 0; k < N; ++k) result.v[k] = f(packs.v[k]...);
      return result;
    };
    store_pack<N>(out, p, compute(load_pack<N>(in, p)...));
  }
  if constexpr (N > 1) {
    for (int64_t i = full_packs * N + thread_index(); i < n; i += thread_count())
      out[i] = f(in[i]...);
  }
}

// Element offsets of operands [0, kOperands) for the output's linear index. One
// decomposition serves every operand; the outermost dimension needs no division. Index is
// uint32_t when the element count allows it, since 64-bit division is several times slower.
template <typename Index, int kOperands>
__device__ __forceinline__ void layout_offsets(const StridedLayout& layout, int64_t linear,
                                               int64_t (&offsets)[kOperands]) {
#pragma unroll
  for (int k = 0; k < kOperands; ++k) offsets[k] = 0;
  Index rest = Index(linear);
  for (int d = layout.ndim - 1; d > 0; --d) {
    const Index size = Index(layout.sizes[d]);
    const Index quotient = rest / size;
    const int64_t at = int64_t(rest - quotient * size);
    rest = quotient;
#pragma unroll
    for (int k = 0; k < kOperands; ++k) offsets[k] += at * layout.strides[k][d];
  }
  if (layout.ndim > 0) {
#pragma unroll
    for (int k = 0; k < kOperands; ++k) offsets[k] += int64_t(rest) * layout.strides[k][0];
  }
}

template <int kFirstIn, typename F, size_t... Is, typename... In>
__device__ __forceinline__ auto apply_at(const F& f, const int64_t* offsets,
                                         std::index_sequence<Is...>, const In*... in) {
  return f(in[offsets[kFirstIn + Is]]...);
}

// The general path. Operand kOutOperand of the layout walks `out` (-1: out is contiguous in
// output order); the inputs are operands kFirstIn, kFirstIn + 1, ...
template <typename Index, int kOutOperand, int kFirstIn, typename F, typename Out, typename... In>
__global__ void __launch_bounds__(kBlockSize)
    map_strided_kernel(int64_t n, const __grid_constant__ StridedLayout layout, F f, Out* out,
                       const In*... in) {
  constexpr int kOperands = kFirstIn + int(sizeof...(In)) > kOutOperand + 1
                                ? kFirstIn + int(sizeof...(In))
                                : kOutOperand + 1;
  for (int64_t i = thread_index(); i < n; i += thread_count()) {
    int64_t offsets[kOperands];
    layout_offsets<Index>(layout, i, offsets);
    const int64_t out_at = kOutOperand < 0 ? i : offsets[kOutOperand < 0 ? 0 : kOutOperand];
    out[out_at] = apply_at<kFirstIn>(f, offsets, std::index_sequence_for<In...>{}, in...);
  }
}

// out[i] = f(in[i]...) for contiguous operands of n elements; vectorised when aligned.
template <typename F, typename Out, typename... In>
void launch_map_contiguous(int64_t n, cudaStream_t stream, F f, Out* out, const In*... in) {
  constexpr int kWidth = kPackWidth<Out, In...>;
  const bool aligned =
      is_aligned(out, sizeof(Out) * kWidth) && (is_aligned(in, sizeof(In) * kWidth) && ...);
  if (kWidth > 1 && aligned) {
    linear_kernel(map_contiguous_kernel<kWidth, F, Out, In...>, 0, stream,
                  (n + kWidth - 1) / kWidth, n, f, out, in...);
  } else {
    linear_kernel(map_contiguous_kernel<1, F, Out, In...>, 0, stream, n, n, f, out, in...);
  }
}

// out = f(in...) over `layout`; see map_strided_kernel for the operand numbering. The caller
// follows with CUDA_CHECK_LAUNCH().
template <int kOutOperand, int kFirstIn, typename F, typename Out, typename... In>
void launch_map(const StridedLayout& layout, cudaStream_t stream, F f, Out* out, const In*... in) {
  const int64_t n = layout.numel();
  int operand = kFirstIn;
  const bool contiguous = (kOutOperand < 0 || layout.is_contiguous(kOutOperand)) &&
                          ((static_cast<void>(in), layout.is_contiguous(operand++)) && ...);
  if (contiguous) {
    launch_map_contiguous(n, stream, f, out, in...);
  } else if (n <= int64_t(UINT32_MAX)) {
    linear_kernel(map_strided_kernel<uint32_t, kOutOperand, kFirstIn, F, Out, In...>, 0, stream, n,
                  layout, f, out, in...);
  } else {
    linear_kernel(map_strided_kernel<uint64_t, kOutOperand, kFirstIn, F, Out, In...>, 0, stream, n,
                  layout, f, out, in...);
  }
}

}  // namespace sonata::kernels::cuda

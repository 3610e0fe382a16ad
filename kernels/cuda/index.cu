// Indexing along the middle axis of [outer, n, inner], one thread per element of the indexed
// side. Indices are not checked on the host (they live on the device): an out-of-range
// index reads as zero in index_select / gather and adds nothing in index_add / scatter_add,
// without a device assert or a host sync. The adds take two paths: atomics for f32 / f64
// (fast, order-dependent rounding), and a sorted, ordered sum under --deterministic
// (base/determinism.h) and always for f16 / bf16, which then accumulate in fp32.
#include "kernels/cuda/index.h"

#include <algorithm>
#include <bit>
#include <cstdint>

#include <cub/device/device_radix_sort.cuh>

#include "base/determinism.h"
#include "base/nvtx.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/stream_scratch.h"

namespace sonata::kernels::cuda {
namespace {

// Position of element e of an [outer, index_n, inner] block. Index is uint32_t when the
// block is small enough, since 64-bit division costs several times more.
struct Position {
  int64_t o, j, i;
};

template <typename Index>
__device__ __forceinline__ Position position(int64_t e, int64_t index_n, int64_t inner) {
  const Index row = Index(e) / Index(inner);
  const Index i = Index(e) - row * Index(inner);
  const Index o = row / Index(index_n);
  const Index j = row - o * Index(index_n);
  return {int64_t(o), int64_t(j), int64_t(i)};
}

// T is the element's bit pattern (dispatch_bits): selection copies, it never converts.
template <typename T, typename Index>
__global__ void __launch_bounds__(kBlockSize)
    index_select_kernel(int64_t total, const T* in, const int64_t* index, T* out, int64_t in_n,
                        int64_t inner, int64_t index_n) {
  for (int64_t e = thread_index(); e < total; e += thread_count()) {
    const Position at = position<Index>(e, index_n, inner);
    const int64_t source = index[at.j];
    out[e] = source >= 0 && source < in_n ? in[(at.o * in_n + source) * inner + at.i] : T(0);
  }
}

template <typename T, typename Index>
__global__ void __launch_bounds__(kBlockSize)
    gather_kernel(int64_t total, const T* in, const int64_t* index, T* out, int64_t in_n,
                  int64_t inner, int64_t index_n) {
  for (int64_t e = thread_index(); e < total; e += thread_count()) {
    const Position at = position<Index>(e, index_n, inner);
    const int64_t source = index[e];
    out[e] = source >= 0 && source < in_n ? in[(at.o * in_n + source) * inner + at.i] : T(0);
  }
}

// kPerElement: the index has one entry per element of src (scatter_add) instead of one per
// position along the axis (index_add). The fast path for f32 / f64 when results may depend
// on scheduling: atomics add in whatever order the threads arrive.
template <typename T, typename Index, bool kPerElement>
__global__ void __launch_bounds__(kBlockSize)
    add_at_kernel(int64_t total, const T* src, const int64_t* index, T* out, int64_t out_n,
                  int64_t inner, int64_t index_n) {
  for (int64_t e = thread_index(); e < total; e += thread_count()) {
    const Position at = position<Index>(e, index_n, inner);
    const int64_t target = index[kPerElement ? e : at.j];
    if (target >= 0 && target < out_n)
      atomicAdd(out + (at.o * out_n + target) * inner + at.i, src[e]);
  }
}

// The ordered path (determinism, and f16 / bf16 always): every source element e gets the key
// (column, target row), column = o * inner + i; out-of-range targets get the slot out_n,
// which sorts after the real rows and is skipped. A stable sort of (key, e) then lines up
// each output element's sources in increasing j, the CPU's order.
template <typename Index, bool kPerElement>
__global__ void __launch_bounds__(kBlockSize)
    ordered_keys_kernel(int64_t total, const int64_t* index, uint64_t* keys, int64_t* sources,
                        int64_t out_n, int64_t inner, int64_t index_n) {
  for (int64_t e = thread_index(); e < total; e += thread_count()) {
    const Position at = position<Index>(e, index_n, inner);
    const int64_t target = index[kPerElement ? e : at.j];
    const int64_t slot = target >= 0 && target < out_n ? target : out_n;
    keys[e] = uint64_t((at.o * inner + at.i) * (out_n + 1) + slot);
    sources[e] = e;
  }
}

// One thread per sorted position; the first position of each key's run adds the run to the
// output element, starting from its value and accumulating in the compute type (fp32 for
// halves), then stores once. f32 and f64 thereby repeat the CPU's additions exactly.
template <typename T>
__global__ void __launch_bounds__(kBlockSize)
    ordered_add_kernel(int64_t total, const uint64_t* keys, const int64_t* sources, const T* src,
                       T* out, int64_t out_n, int64_t inner) {
  using C = compute_t<T>;
  const uint64_t slots = uint64_t(out_n + 1);
  for (int64_t p = thread_index(); p < total; p += thread_count()) {
    const uint64_t key = keys[p];
    if (p > 0 && keys[p - 1] == key) continue;
    const int64_t slot = int64_t(key % slots), column = int64_t(key / slots);
    if (slot == out_n) continue;
    const int64_t o = column / inner, i = column - o * inner;
    T* target = out + (o * out_n + slot) * inner + i;
    C total_value = load(*target);
    for (int64_t q = p; q < total && keys[q] == key; ++q) total_value += load(src[sources[q]]);
    *target = store<T>(total_value);
  }
}

size_t round_up_256(size_t bytes) {
  return (bytes + 255) / 256 * 256;
}

// index_add / scatter_add by sorting, so that each output element sums its sources in a
// fixed order (PyTorch's deterministic index_put_ with accumulate also sorts the indices).
template <bool kPerElement>
void ordered_add(DType dtype, const void* src, const int64_t* index, void* out, int64_t outer,
                 int64_t out_n, int64_t inner, int64_t index_n, cudaStream_t stream,
                 const char* name) {
  const int64_t total = outer * index_n * inner;
  if (total <= 0) return;
  SONATA_CHECK(total <= int64_t(INT32_MAX), "sonata::cuda::", name, ": ", total,
               " source elements exceed the ordered path's 2^31 - 1 (split the tensor)");
  const uint64_t key_count = uint64_t(outer * inner) * uint64_t(out_n + 1);
  const int end_bit = std::max(1, int(std::bit_width(key_count - 1)));
  size_t sort_bytes = 0;
  CUDA_CHECK(cub::DeviceRadixSort::SortPairs(
      nullptr, sort_bytes, static_cast<const uint64_t*>(nullptr), static_cast<uint64_t*>(nullptr),
      static_cast<const int64_t*>(nullptr), static_cast<int64_t*>(nullptr), int(total), 0, end_bit,
      stream));
  const size_t array_bytes = round_up_256(size_t(total) * sizeof(uint64_t));
  // Freed on the stream after the kernels that use it, also when a launch check throws.
  const StreamScratch scratch(4 * array_bytes + sort_bytes, stream);
  char* base = scratch.as<char>();
  auto* keys_in = reinterpret_cast<uint64_t*>(base);
  auto* keys_out = reinterpret_cast<uint64_t*>(base + array_bytes);
  auto* sources_in = reinterpret_cast<int64_t*>(base + 2 * array_bytes);
  auto* sources_out = reinterpret_cast<int64_t*>(base + 3 * array_bytes);
  void* sort_scratch = base + 4 * array_bytes;

  linear_kernel(ordered_keys_kernel<uint64_t, kPerElement>, 0, stream, total, index, keys_in,
                sources_in, out_n, inner, index_n);
  CUDA_CHECK_LAUNCH();
  CUDA_CHECK(cub::DeviceRadixSort::SortPairs(sort_scratch, sort_bytes, keys_in, keys_out,
                                             sources_in, sources_out, int(total), 0, end_bit,
                                             stream));
  dispatch_f16_bf16_f32_f64(dtype, name, [&]<typename T>() {
    linear_kernel(ordered_add_kernel<T>, 0, stream, total, keys_out, sources_out,
                  static_cast<const T*>(src), static_cast<T*>(out), out_n, inner);
    CUDA_CHECK_LAUNCH();
  });
}

// Atomics only where the order may vary and the sum is in the element's own precision.
bool use_atomics(DType dtype) {
  return !deterministic_algorithms() && (dtype == DType::f32 || dtype == DType::f64);
}

}  // namespace

void index_select(DType dtype, const void* in, const int64_t* index, void* out, int64_t outer,
                  int64_t in_n, int64_t inner, int64_t index_n, cudaStream_t stream) {
  SONATA_NVTX_RANGE("sonata::cuda::index_select");
  const int64_t total = outer * index_n * inner;
  dispatch_bits(dtype, "index_select", [&]<typename T>() {
    const auto kernel = total <= int64_t(UINT32_MAX) ? index_select_kernel<T, uint32_t>
                                                     : index_select_kernel<T, uint64_t>;
    linear_kernel(kernel, 0, stream, total, static_cast<const T*>(in), index, static_cast<T*>(out),
                  in_n, inner, index_n);
    CUDA_CHECK_LAUNCH();
  });
}

void index_add(DType dtype, const void* src, const int64_t* index, void* out, int64_t outer,
               int64_t out_n, int64_t inner, int64_t index_n, cudaStream_t stream) {
  SONATA_NVTX_RANGE("sonata::cuda::index_add");
  if (!use_atomics(dtype))
    return ordered_add<false>(dtype, src, index, out, outer, out_n, inner, index_n, stream,
                              "index_add");
  const int64_t total = outer * index_n * inner;
  dispatch_f16_bf16_f32_f64(dtype, "index_add", [&]<typename T>() {
    const auto kernel = total <= int64_t(UINT32_MAX) ? add_at_kernel<T, uint32_t, false>
                                                     : add_at_kernel<T, uint64_t, false>;
    linear_kernel(kernel, 0, stream, total, static_cast<const T*>(src), index, static_cast<T*>(out),
                  out_n, inner, index_n);
    CUDA_CHECK_LAUNCH();
  });
}

void gather(DType dtype, const void* in, const int64_t* index, void* out, int64_t outer,
            int64_t in_n, int64_t inner, int64_t index_n, cudaStream_t stream) {
  SONATA_NVTX_RANGE("sonata::cuda::gather");
  const int64_t total = outer * index_n * inner;
  dispatch_bits(dtype, "gather", [&]<typename T>() {
    const auto kernel =
        total <= int64_t(UINT32_MAX) ? gather_kernel<T, uint32_t> : gather_kernel<T, uint64_t>;
    linear_kernel(kernel, 0, stream, total, static_cast<const T*>(in), index, static_cast<T*>(out),
                  in_n, inner, index_n);
    CUDA_CHECK_LAUNCH();
  });
}

void scatter_add(DType dtype, const void* src, const int64_t* index, void* out, int64_t outer,
                 int64_t out_n, int64_t inner, int64_t index_n, cudaStream_t stream) {
  SONATA_NVTX_RANGE("sonata::cuda::scatter_add");
  if (!use_atomics(dtype))
    return ordered_add<true>(dtype, src, index, out, outer, out_n, inner, index_n, stream,
                             "scatter_add");
  const int64_t total = outer * index_n * inner;
  dispatch_f16_bf16_f32_f64(dtype, "scatter_add", [&]<typename T>() {
    const auto kernel = total <= int64_t(UINT32_MAX) ? add_at_kernel<T, uint32_t, true>
                                                     : add_at_kernel<T, uint64_t, true>;
    linear_kernel(kernel, 0, stream, total, static_cast<const T*>(src), index, static_cast<T*>(out),
                  out_n, inner, index_n);
    CUDA_CHECK_LAUNCH();
  });
}

}  // namespace sonata::kernels::cuda

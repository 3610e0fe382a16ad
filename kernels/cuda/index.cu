// Indexing along the middle axis of [outer, n, inner], one thread per element of the indexed
// side. Indices are not checked on the host (they live on the device): an out-of-range
// index reads as zero in index_select / gather and adds nothing in index_add / scatter_add,
// without a device assert or a host sync.
#include "kernels/cuda/index.h"

#include "base/nvtx.h"
#include "kernels/cuda/launch.cuh"

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
// position along the axis (index_add).
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
  const int64_t total = outer * index_n * inner;
  dispatch_float(dtype, "index_add", [&]<typename T>() {
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
  const int64_t total = outer * index_n * inner;
  dispatch_float(dtype, "scatter_add", [&]<typename T>() {
    const auto kernel = total <= int64_t(UINT32_MAX) ? add_at_kernel<T, uint32_t, true>
                                                     : add_at_kernel<T, uint64_t, true>;
    linear_kernel(kernel, 0, stream, total, static_cast<const T*>(src), index, static_cast<T*>(out),
                  out_n, inner, index_n);
    CUDA_CHECK_LAUNCH();
  });
}

}  // namespace sonata::kernels::cuda

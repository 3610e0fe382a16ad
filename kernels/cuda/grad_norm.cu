// Global L2 norm and clipping over lists of tensors (multi_tensor.cuh). Each block sums the
// squares of one chunk in double and writes its own partial; one block then adds the
// partials in a fixed tree: no atomics, so a rerun gives the same bits.
#include "kernels/cuda/grad_norm.h"

#include <climits>

#include "base/nvtx.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/lines.cuh"
#include "kernels/cuda/multi_tensor.cuh"

namespace sonata::kernels::cuda {
namespace {

struct AddDouble {
  __device__ double operator()(double a, double b) const { return a + b; }
};

template <typename T>
__global__ void __launch_bounds__(kBlockSize)
    squared_norm_kernel(const __grid_constant__ TensorList<1> list, double* partials) {
  const ChunkRange range = block_chunk(list);
  const T* x = static_cast<const T*>(list.pointers[0][range.tensor]);
  double sum = 0;
  for (int64_t i = range.begin + threadIdx.x; i < range.end; i += kBlockSize) {
    const double value = double(load(x[i]));
    sum += value * value;
  }
  sum = BlockAllReduce<kBlockSize>{}(sum, AddDouble{});
  if (threadIdx.x == 0) partials[list.chunk_base + blockIdx.x] = sum;
}

__global__ void __launch_bounds__(kBlockSize)
    clip_coefficient_kernel(const double* partials, int64_t partial_count, double max_norm,
                            double* result) {
  double sum = 0;
  for (int64_t k = threadIdx.x; k < partial_count; k += kBlockSize) sum += partials[k];
  sum = BlockAllReduce<kBlockSize>{}(sum, AddDouble{});
  if (threadIdx.x == 0) {
    const double norm = sqrt(sum);
    const double coefficient = max_norm / (norm + 1e-6);
    result[0] = norm;
    result[1] = coefficient > 1.0 ? 1.0 : coefficient;  // torch.clamp(max=1) keeps a NaN
  }
}

template <typename T>
__global__ void __launch_bounds__(kBlockSize)
    scale_kernel(const __grid_constant__ TensorList<1> list, const double* factor) {
  const ChunkRange range = block_chunk(list);
  T* x = static_cast<T*>(list.pointers[0][range.tensor]);
  const compute_t<T> f = compute_t<T>(*factor);
  for (int64_t i = range.begin + threadIdx.x; i < range.end; i += kBlockSize)
    x[i] = store<T>(load(x[i]) * f);
}

void check_grid(int64_t chunks, const char* kernel) {
  SONATA_CHECK(chunks <= INT_MAX, "sonata::cuda::", kernel, ": ", chunks,
               " chunks exceed one launch's grid");
}

}  // namespace

void squared_norm_partials(DType dtype, const void* const* tensors, const int64_t* numels,
                           int64_t count, double* partials, cudaStream_t stream) {
  SONATA_NVTX_RANGE("sonata::cuda::squared_norm_partials");
  dispatch_f16_bf16_f32_f64(dtype, "squared_norm_partials", [&]<typename T>() {
    auto describe = [&](int64_t t, std::array<void*, 1>& pointers) {
      pointers = {const_cast<void*>(tensors[t])};
      return numels[t];
    };
    for_each_tensor_list<1>(count, describe, [&](const TensorList<1>& list, int64_t chunks) {
      check_grid(chunks, "squared_norm_partials");
      launch(squared_norm_kernel<T>, unsigned(chunks), kBlockSize, 0, stream, list, partials);
      CUDA_CHECK_LAUNCH();
    });
  });
}

void clip_coefficient(const double* partials, int64_t partial_count, double max_norm,
                      double* result, cudaStream_t stream) {
  SONATA_NVTX_RANGE("sonata::cuda::clip_coefficient");
  launch(clip_coefficient_kernel, 1, kBlockSize, 0, stream, partials, partial_count, max_norm,
         result);
  CUDA_CHECK_LAUNCH();
}

void scale_tensors(DType dtype, void* const* tensors, const int64_t* numels, int64_t count,
                   const double* factor, cudaStream_t stream) {
  SONATA_NVTX_RANGE("sonata::cuda::scale_tensors");
  dispatch_f16_bf16_f32_f64(dtype, "scale_tensors", [&]<typename T>() {
    auto describe = [&](int64_t t, std::array<void*, 1>& pointers) {
      pointers = {tensors[t]};
      return numels[t];
    };
    for_each_tensor_list<1>(count, describe, [&](const TensorList<1>& list, int64_t chunks) {
      check_grid(chunks, "scale_tensors");
      launch(scale_kernel<T>, unsigned(chunks), kBlockSize, 0, stream, list, factor);
      CUDA_CHECK_LAUNCH();
    });
  });
}

}  // namespace sonata::kernels::cuda

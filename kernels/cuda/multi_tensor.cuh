#pragma once
// Updating a list of tensors in one launch, as apex / PyTorch's multi_tensor_apply: the
// list travels by value in the kernel's arguments (no device copy, nothing to allocate),
// one block per chunk of kTensorChunk elements (kernels/common/multi_tensor.h). A list
// longer than one argument block allows is cut into consecutive launches. Included by .cu
// only.
#include <array>
#include <cstdint>

#include "kernels/common/multi_tensor.h"
#include "kernels/cuda/launch.cuh"

namespace sonata::kernels::cuda {

// The classic 4 KiB kernel-argument space, less room for the kernel's other arguments.
inline constexpr int kTensorListBytes = 3584;

// kDepth pointers per tensor (param, grad, state...), its size and the launch-local number
// of its first chunk; block b works on the tensor whose chunks include b.
template <int kDepth>
struct TensorList {
  static constexpr int kMaxTensors = (kTensorListBytes - 16) / (kDepth * 8 + 16);
  void* pointers[kDepth][kMaxTensors];
  int64_t numels[kMaxTensors];
  int64_t first_chunk[kMaxTensors];
  int64_t chunk_base;  // chunks in earlier launches of the same list
  int32_t count;
};

struct ChunkRange {
  int tensor;
  int64_t begin, end;  // elements of that tensor
};

// This block's tensor, by binary search over first_chunk (the tensors are non-empty, so
// the first_chunk values strictly increase).
template <int kDepth>
__device__ __forceinline__ ChunkRange block_chunk(const TensorList<kDepth>& list) {
  const int64_t chunk = blockIdx.x;
  int low = 0, high = list.count - 1;
  while (low < high) {
    const int middle = (low + high + 1) / 2;
    if (list.first_chunk[middle] <= chunk) {
      low = middle;
    } else {
      high = middle - 1;
    }
  }
  const int64_t begin = (chunk - list.first_chunk[low]) * kTensorChunk;
  const int64_t end =
      begin + kTensorChunk < list.numels[low] ? begin + kTensorChunk : list.numels[low];
  return {low, begin, end};
}

// Fills lists from describe(t, pointers) -> numel for t < count, skipping empty tensors, and
// calls launch(list, chunks) for each full list and the last one; the launcher starts
// `chunks` blocks of kBlockSize threads and checks the launch.
template <int kDepth, typename Describe, typename Launch>
void for_each_tensor_list(int64_t count, Describe&& describe, Launch&& launch) {
  static_assert(sizeof(TensorList<kDepth>) <= kTensorListBytes);
  TensorList<kDepth> list{};
  int64_t chunks = 0;
  for (int64_t t = 0; t < count; ++t) {
    std::array<void*, kDepth> pointers{};
    const int64_t numel = describe(t, pointers);
    if (numel == 0) continue;
    if (list.count == TensorList<kDepth>::kMaxTensors) {
      launch(list, chunks);
      list.chunk_base += chunks;
      list.count = 0;
      chunks = 0;
    }
    const int slot = list.count++;
    for (int d = 0; d < kDepth; ++d) list.pointers[d][slot] = pointers[d];
    list.numels[slot] = numel;
    list.first_chunk[slot] = chunks;
    chunks += chunk_count(numel);
  }
  if (list.count > 0) launch(list, chunks);
}

}  // namespace sonata::kernels::cuda

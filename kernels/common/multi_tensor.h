#pragma once
// How kernels that walk a list of tensors cut them up: each tensor into chunks of
// kTensorChunk elements (the last one shorter), numbered tensor by tensor. A CUDA block
// takes one chunk; the gradient norm keeps one partial sum per chunk on both backends, so
// the engine sizes that buffer with chunk_count() whichever device runs it.
#include <cstdint>

namespace sonata::kernels {

inline constexpr int64_t kTensorChunk = int64_t(1) << 16;

inline int64_t chunk_count(int64_t numel) {
  return (numel + kTensorChunk - 1) / kTensorChunk;
}

inline int64_t chunk_count(const int64_t* numels, int64_t count) {
  int64_t chunks = 0;
  for (int64_t t = 0; t < count; ++t) chunks += chunk_count(numels[t]);
  return chunks;
}

}  // namespace sonata::kernels

// Stream-ordered kernel scratch (kernels/cuda/stream_scratch.h) on a GPU: the memory goes
// back to the device's pool once the stream reaches the free, also when the owner's scope
// is left by an exception (a launch check throwing between the allocation and the last
// kernel), a moved owner frees once, and try_allocate's out-of-memory leaves no error for
// the next launch check.
#include <catch2/catch.hpp>

#if SONATA_WITH_CUDA
#include <cuda_runtime_api.h>

#include <cstdint>
#include <stdexcept>
#include <utility>

#include "base/cuda_check.h"
#include "engine/cuda/stream.h"
#include "kernels/cuda/stream_scratch.h"

using sonata::kernels::cuda::StreamScratch;

namespace {

constexpr size_t kBytes = size_t(8) << 20;

// Bytes of the current device's default pool handed out and not yet freed.
uint64_t pool_used_bytes() {
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  cudaMemPool_t pool;
  CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, device));
  uint64_t used = 0;
  CUDA_CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used));
  return used;
}

}  // namespace

TEST_CASE("cuda stream scratch returns its memory when the scope throws", "[cuda][scratch]") {
  const cudaStream_t stream = sonata::current_stream(0);
  CUDA_CHECK(cudaStreamSynchronize(stream));
  const uint64_t before = pool_used_bytes();
  try {
    const StreamScratch scratch(kBytes, stream);
    REQUIRE_FALSE(scratch.empty());
    CUDA_CHECK(cudaMemsetAsync(scratch.data(), 0, kBytes, stream));
    CHECK(pool_used_bytes() >= before + kBytes);
    throw std::runtime_error("a launch check failed");
  } catch (const std::runtime_error&) {
  }
  CUDA_CHECK(cudaStreamSynchronize(stream));
  CHECK(pool_used_bytes() == before);
}

TEST_CASE("cuda stream scratch: a moved owner frees once", "[cuda][scratch]") {
  const cudaStream_t stream = sonata::current_stream(0);
  CUDA_CHECK(cudaStreamSynchronize(stream));
  const uint64_t before = pool_used_bytes();
  {
    StreamScratch first(kBytes, stream);
    void* memory = first.data();
    StreamScratch second(std::move(first));
    CHECK(first.empty());
    CHECK(second.data() == memory);
    StreamScratch third = StreamScratch::try_allocate(kBytes, stream);
    REQUIRE_FALSE(third.empty());
    third = std::move(second);  // frees third's own memory first
    CHECK(third.data() == memory);
  }
  CUDA_CHECK(cudaStreamSynchronize(stream));
  CHECK(pool_used_bytes() == before);
}
TEST_CASE("cuda stream scratch: try_allocate out of memory is empty and clears the error",
          "[cuda][scratch]") {
  const cudaStream_t stream = sonata::current_stream(0);
  const StreamScratch scratch = StreamScratch::try_allocate(size_t(1) << 62, stream);
  CHECK(scratch.empty());
  CHECK(cudaGetLastError() == cudaSuccess);
}
#endif

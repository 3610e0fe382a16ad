// The owner of the CUDA kernels' stream-ordered scratch (kernels/cuda/stream_scratch.h), on
// the paths that need no GPU: an allocation that cannot succeed (no device here, or more
// than any device has) throws from the constructor, and try_allocate returns an empty
// owner. The CUDA build's CPU tests run these; the CPU build has no CUDA runtime to own
// memory of. Whether try_allocate clears the failure is checked on a GPU (without a driver
// every runtime call, cudaGetLastError included, reports the missing driver again). The freeing on
// every path is checked on a GPU (tests/cuda/test_cuda_stream_scratch.cpp).
#include <catch2/catch.hpp>

#if SONATA_WITH_CUDA
#include <cuda_runtime_api.h>

#include <cstddef>
#include <utility>

#include "base/error.h"
#include "kernels/cuda/stream_scratch.h"

using sonata::kernels::cuda::StreamScratch;

namespace {
constexpr size_t kImpossibleBytes = size_t(1) << 62;
}  // namespace

TEST_CASE("stream scratch: a failed allocation throws and owns nothing", "[core][scratch]") {
  CHECK_THROWS_AS(StreamScratch(kImpossibleBytes, nullptr), sonata::Error);
  (void)cudaGetLastError();  // as after any failed CUDA_CHECK, the status is still the last
}

TEST_CASE("stream scratch: try_allocate gives an empty owner", "[core][scratch]") {
  const StreamScratch scratch = StreamScratch::try_allocate(kImpossibleBytes, nullptr);
  CHECK(scratch.empty());
  CHECK(scratch.data() == nullptr);
  (void)cudaGetLastError();
}

TEST_CASE("stream scratch: zero bytes and the default owner hold nothing", "[core][scratch]") {
  const StreamScratch none;
  CHECK(none.empty());
  const StreamScratch zero(0, nullptr);  // never reaches the runtime, so no device is needed
  CHECK(zero.empty());
  StreamScratch moved = StreamScratch::try_allocate(0, nullptr);
  moved = StreamScratch();
  CHECK(moved.empty());
}
#endif

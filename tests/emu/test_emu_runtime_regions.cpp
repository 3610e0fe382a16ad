// The emulator's sub-allocation regions (emu/include/sonata_emu_regions.h): inside a
// sub-allocated device allocation, the memory checks see each region as an allocation of
// its own, in stream order; and the count of driver allocations.
#include <catch2/catch.hpp>

#include "cuda_runtime_api.h"
#include "emu/runtime/memory_map.h"
#include "sonata_emu_regions.h"

using namespace sonata::emu;

namespace {

AccessVerdict read_of(const void* at) {
  return check_access(at, 4, AccessKind::read).verdict;
}

}  // namespace

TEST_CASE("emu runtime: a sub-allocator's regions are allocations to the memory checks",
          "[emu][runtime]") {
  REQUIRE(cudaSetDevice(0) == cudaSuccess);
  cudaStream_t stream = nullptr;
  REQUIRE(cudaStreamCreate(&stream) == cudaSuccess);
  const int64_t allocations = sonataEmuDeviceAllocations();
  char* segment = nullptr;
  REQUIRE(cudaMallocAsync(reinterpret_cast<void**>(&segment), 4096, stream) == cudaSuccess);
  CHECK(sonataEmuDeviceAllocations() == allocations + 1);
  REQUIRE(sonataEmuRegionAllocated(segment, 100, stream) == cudaSuccess);
  REQUIRE(sonataEmuRegionAllocated(segment + 512, 200, stream) == cudaSuccess);
  // The regions exist once the stream has run their calls: before, the bytes are in none.
  CHECK(read_of(segment) == AccessVerdict::out_of_bounds);
  REQUIRE(cudaStreamSynchronize(stream) == cudaSuccess);
  CHECK(read_of(segment) == AccessVerdict::uninitialised);
  CHECK(check_access(segment, 100, AccessKind::write).verdict == AccessVerdict::ok);
  CHECK(read_of(segment + 96) == AccessVerdict::ok);
  const AccessCheck past = check_access(segment + 98, 4, AccessKind::read);
  CHECK(past.verdict == AccessVerdict::out_of_bounds);
  CHECK(past.detail.find("the 100-byte sub-allocation at offset 0") != std::string::npos);
  // Between regions: never handed out (or past a region's end), so out of bounds.
  const AccessCheck between = check_access(segment + 300, 4, AccessKind::write);
  CHECK(between.verdict == AccessVerdict::out_of_bounds);
  CHECK(between.detail.find("none of its live sub-allocations") != std::string::npos);
  CHECK(read_of(segment + 512) == AccessVerdict::uninitialised);

  // A free, in stream order too; the next owner finds poison, never written.
  REQUIRE(sonataEmuRegionFreed(segment, stream) == cudaSuccess);
  CHECK(read_of(segment) == AccessVerdict::ok);
  REQUIRE(cudaStreamSynchronize(stream) == cudaSuccess);
  CHECK(read_of(segment) == AccessVerdict::freed);
  CHECK(read_of(segment + 300) == AccessVerdict::out_of_bounds);
  REQUIRE(sonataEmuRegionAllocated(segment, 64, stream) == cudaSuccess);
  REQUIRE(cudaStreamSynchronize(stream) == cudaSuccess);
  CHECK(read_of(segment) == AccessVerdict::uninitialised);
  CHECK(read_of(segment + 64) == AccessVerdict::freed);  // the rest of the freed region
  CHECK(static_cast<unsigned char>(segment[0]) == 0xFF);
  CHECK(sonataEmuDeviceAllocations() == allocations + 1);  // none of this was a driver call

  // Calls naming memory outside a live allocation, or a region in a plain one, are refused.
  int host = 0;
  CHECK(sonataEmuRegionAllocated(&host, 4, stream) == cudaErrorInvalidValue);
  CHECK(cudaGetLastError() == cudaErrorInvalidValue);
  // The driver's block, freed and handed out again, forgets the regions.
  REQUIRE(cudaFreeAsync(segment, stream) == cudaSuccess);
  REQUIRE(cudaStreamSynchronize(stream) == cudaSuccess);
  char* again = nullptr;
  REQUIRE(cudaMallocAsync(reinterpret_cast<void**>(&again), 4096, stream) == cudaSuccess);
  REQUIRE(again == segment);
  CHECK(check_access(again + 300, 4, AccessKind::write).verdict == AccessVerdict::ok);
  CHECK(sonataEmuRegionFreed(again, stream) == cudaErrorInvalidValue);
  CHECK(cudaGetLastError() == cudaErrorInvalidValue);
  REQUIRE(cudaFreeAsync(again, stream) == cudaSuccess);
  REQUIRE(cudaStreamDestroy(stream) == cudaSuccess);
}

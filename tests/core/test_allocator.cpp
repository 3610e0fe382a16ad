#include <catch2/catch.hpp>

#include <cstring>

#include "engine/allocator.h"
#include "engine/ops.h"

using namespace sonata;

TEST_CASE("CPU blocks are 64-byte aligned and counted while alive", "[core][allocator]") {
  const MemoryStats before = cpu_memory_stats();
  for (size_t nbytes : {size_t(0), size_t(1), size_t(100), size_t(3) << 20}) {
    void* p = cpu_allocate(nbytes);
    CHECK(reinterpret_cast<uintptr_t>(p) % kCpuAlignment == 0);
    std::memset(p, 1, nbytes);  // the whole size is usable
    CHECK(cpu_memory_stats().allocated_bytes >= before.allocated_bytes + int64_t(nbytes));
    cpu_free(p, nbytes);
  }
  CHECK(cpu_memory_stats().allocated_bytes == before.allocated_bytes);
  CHECK(cpu_memory_stats().allocations == before.allocations + 4);
}

TEST_CASE("large CPU blocks are reused by size and the cache obeys its limit",
          "[core][allocator]") {
  if (!cpu_cache_enabled()) {
    SUCCEED("cache disabled under AddressSanitizer");
    return;
  }
  cpu_release_cached_memory();
  const size_t nbytes = (size_t(5) << 20) + 123;
  void* first = cpu_allocate(nbytes);
  cpu_free(first, nbytes);
  CHECK(cpu_memory_stats().cached_bytes >= int64_t(nbytes));
  // A slightly smaller request fits the same block; a much smaller one does not take it.
  void* again = cpu_allocate(nbytes - 4096);
  CHECK(again == first);
  CHECK(cpu_memory_stats().cached_bytes == 0);
  void* small = cpu_allocate(size_t(1) << 20);
  CHECK(small != first);
  cpu_free(small, size_t(1) << 20);
  cpu_free(again, nbytes - 4096);

  // Over the limit, freed blocks go back to the system instead.
  const size_t default_limit = cpu_set_cache_limit(size_t(4) << 20);
  CHECK(cpu_memory_stats().cached_bytes <= int64_t(4) << 20);
  void* big = cpu_allocate(nbytes);
  cpu_free(big, nbytes);
  CHECK(cpu_memory_stats().cached_bytes <= int64_t(4) << 20);
  cpu_set_cache_limit(default_limit);
  cpu_release_cached_memory();
  CHECK(cpu_memory_stats().cached_bytes == 0);
}

TEST_CASE("peak CPU memory follows tensors and resets", "[core][allocator]") {
  cpu_reset_peak_memory_stats();
  const int64_t base = cpu_memory_stats().allocated_bytes;
  {
    const Tensor big = zeros({1 << 20});  // 4 MiB
    CHECK(cpu_memory_stats().allocated_bytes >= base + (int64_t(4) << 20));
  }
  CHECK(cpu_memory_stats().allocated_bytes == base);
  CHECK(cpu_memory_stats().peak_allocated_bytes >= base + (int64_t(4) << 20));
  cpu_reset_peak_memory_stats();
  CHECK(cpu_memory_stats().peak_allocated_bytes == base);
}

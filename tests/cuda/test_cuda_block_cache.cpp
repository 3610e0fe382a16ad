// The CUDA allocator's block cache (engine/block_cache.h) on a device: a repeated step
// allocates nothing from the driver, each device has its own cache, a freed tensor's bytes
// are freed memory to the emulator's checks until handed out again (never written then),
// and an allocation that does not fit beside the cache's segments gets them back. The
// record-stream rule: test_cuda_runtime's "memory recorded on another stream ...".
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "engine/allocator.h"
#include "engine/ops.h"
#include "tests/cuda/parity_util.h"

#if SONATA_WITH_CUDA
#include <cuda_runtime_api.h>
#endif
#if defined(SONATA_CUDA_EMU)
#include <sonata_emu_regions.h>

#include "emu/runtime/memory_map.h"
#endif

using namespace sonata;

namespace {

TensorOptions on_device(int index) {
  return TensorOptions{}.with(Device::cuda(index));
}

// A training step's allocation pattern in small: forward, backward, an update.
double step(Tensor& w, const Tensor& x) {
  Tensor loss = sum(mul(mul(w, x), add(w, 1.0)));
  loss.backward();
  const Tensor updated = sub(w.detach(), mul(w.grad(), 0.01));
  w = updated.detach();
  w.set_requires_grad(true);
  return loss.item();
}

int64_t driver_allocations() {
#if defined(SONATA_CUDA_EMU)
  return sonataEmuDeviceAllocations();
#else
  return 0;  // a card has no count: the cache's misses below stand alone
#endif
}

}  // namespace

TEST_CASE("a repeated step takes every tensor from the block cache", "[cuda][memory]") {
  const int64_t n = 3000;
  Tensor w = full({n}, 0.5, on_device(0));
  w.set_requires_grad(true);
  const Tensor x = full({n}, 2.0, on_device(0));
  for (int i = 0; i < 2; ++i) step(w, x);  // warm: the segments exist from here on
  const CudaCacheStats warm = cuda_cache_stats(0);
  const int64_t warm_driver = driver_allocations();
  double loss = 0;
  for (int i = 0; i < 3; ++i) loss = step(w, x);
  const CudaCacheStats after = cuda_cache_stats(0);
  CHECK(after.misses == warm.misses);
  CHECK(driver_allocations() == warm_driver);
  CHECK(after.hits > warm.hits + 3 * 5);  // each step makes several tensors
  CHECK(after.reserved_bytes == warm.reserved_bytes);
  // Five updates of w -= 0.01 * (2 (2w + 1)), from 0.5: the values went through the cache.
  double value = 0.5;
  for (int i = 0; i < 4; ++i) value -= 0.01 * 2.0 * (2.0 * value + 1.0);
  CHECK(loss == Approx(double(n) * 2.0 * value * (value + 1.0)).epsilon(1e-5));
}

TEST_CASE("each device has its own block cache", "[cuda][memory]") {
  if (cuda_device_count() < 2) {
    WARN("one GPU: the caches of two devices are not tested");
    return;
  }
  (void)empty({1}, on_device(1));
  const CudaCacheStats zero = cuda_cache_stats(0), one = cuda_cache_stats(1);
  void* first = nullptr;
  {
    const Tensor a = full({5000}, 3.0, on_device(1));
    first = a.data_ptr();
    CHECK(sum(a).item() == 15000.0);
  }
  {
    const Tensor b = full({5000}, 4.0, on_device(1));
    CHECK(b.data_ptr() == first);  // cuda:1's own block again
    CHECK(sum(b).item() == 20000.0);
  }
  const CudaCacheStats zero_after = cuda_cache_stats(0), one_after = cuda_cache_stats(1);
  CHECK(one_after.hits > one.hits);
  CHECK(zero_after.hits == zero.hits);
  CHECK(zero_after.misses == zero.misses);
  CHECK(one_after.cached_bytes > 0);
  cuda_empty_cache(1);
  CHECK(cuda_cache_stats(1).cached_bytes == 0);
  CHECK(cuda_cache_stats(1).segment_frees > one.segment_frees);
}

#if defined(SONATA_CUDA_EMU)
TEST_CASE("a freed tensor's bytes are freed memory to the emulator until handed out again",
          "[cuda][memory]") {
  using namespace sonata::emu;
  const int64_t n = 1000;
  const void* stale = nullptr;
  {
    const Tensor t = full({n}, 1.0, on_device(0));
    stale = t.data_ptr();
    REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
    CHECK(check_access(stale, 4, AccessKind::read).verdict == AccessVerdict::ok);
    // One past the tensor's end is an error (out of bounds, or freed where an earlier
    // tensor's region was), though the cache's block is larger.
    CHECK(check_access(static_cast<const float*>(stale) + n, 4, AccessKind::read).verdict !=
          AccessVerdict::ok);
  }
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  // A kernel reading through the stale pointer would be reported as reading freed memory.
  CHECK(check_access(stale, 4, AccessKind::read).verdict == AccessVerdict::freed);
  const Tensor next = empty({n}, on_device(0));
  REQUIRE(next.data_ptr() == stale);  // the same block, without a driver call
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  // Its new owner never wrote it: initcheck reports a read, and the old values are gone.
  CHECK(check_access(stale, 4, AccessKind::read).verdict == AccessVerdict::uninitialised);
  CHECK(*static_cast<const uint32_t*>(stale) == 0xFFFFFFFFu);
}
#endif

#if SONATA_WITH_CUDA
TEST_CASE("an allocation that does not fit beside the cached segments gets them back",
          "[cuda][memory]") {
  size_t free = 0, total = 0;
  REQUIRE(cudaMemGetInfo(&free, &total) == cudaSuccess);
  // Tensors of 1/8 of the free memory, until no more fit, freed into the cache; then one of
  // 3/8, which fits only once the cache has given their segments back.
  const int64_t chunk = int64_t(free / 8) & ~int64_t(4095);
  const TensorOptions bytes = on_device(0).with(DType::u8);
  {
    std::vector<Tensor> held;
    for (int i = 0; i < 7; ++i) held.push_back(empty({chunk}, bytes));
  }
  const CudaCacheStats cached = cuda_cache_stats(0);
  CHECK(cached.cached_bytes >= 7 * chunk);
  const Tensor big = empty({3 * chunk}, bytes);
  const CudaCacheStats after = cuda_cache_stats(0);
  CHECK(after.segment_frees > cached.segment_frees);
  CHECK(after.reserved_bytes < cached.reserved_bytes);
  CHECK(big.data_ptr() != nullptr);
}
#endif

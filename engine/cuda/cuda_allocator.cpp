#include "engine/cuda/cuda_allocator.h"

#include <array>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <memory>
#include <mutex>
#include <vector>

#include "base/cuda_check.h"
#include "base/cuda_status.h"
#include "engine/allocator.h"
#include "engine/block_cache.h"
#include "engine/cuda/stream.h"
#include "engine/device_guard.h"
#include "kernels/cuda/device_pool.h"
#if defined(SONATA_CUDA_EMU)
#include <sonata_emu_regions.h>
#endif

namespace sonata {
namespace {
constexpr int kMaxDevices = 64;

struct DeviceCounters {
  std::atomic<int64_t> allocated{0};
  std::atomic<int64_t> peak{0};
  std::atomic<int64_t> allocations{0};
};
std::array<DeviceCounters, kMaxDevices> g_counters;

// The block cache's device calls on one device. Frees (and so events and annotations) may
// run on any thread, since the last reference to a tensor may be dropped anywhere: each call
// selects the device first.
class CudaCacheDriver final : public CacheDriver {
 public:
  explicit CudaCacheDriver(int device) : device_(device) {}

  void* allocate_segment(size_t bytes, StreamHandle stream, bool last_try) override {
    const CudaDeviceGuard on_device(Device::cuda(device_));
    void* data = nullptr;
    const auto allocate = [&] {
      return cudaMallocAsync(&data, bytes, static_cast<cudaStream_t>(stream));
    };
    if (last_try) {
      kernels::cuda::allocate_retrying("a tensor", bytes, device_, allocate);
      return data;
    }
    const cudaError_t status = allocate();
    if (status == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();  // an answer: the cache empties itself and retries
      return nullptr;
    }
    CUDA_CHECK(status);
    return data;
  }
  void free_segment(void* data, StreamHandle stream) override {
    const CudaDeviceGuard on_device(Device::cuda(device_));
    CUDA_RELEASE(cudaFreeAsync(data, static_cast<cudaStream_t>(stream)));
  }
  EventHandle record_event(StreamHandle stream) override {
    try {
      const CudaDeviceGuard on_device(Device::cuda(device_));
      cudaEvent_t event = nullptr;
      if (!CUDA_RELEASE(cudaEventCreateWithFlags(&event, cudaEventDisableTiming))) return nullptr;
      if (!CUDA_RELEASE(cudaEventRecord(event, static_cast<cudaStream_t>(stream)))) {
        CUDA_RELEASE(cudaEventDestroy(event));
        return nullptr;
      }
      return event;
    } catch (const std::exception& failure) {
      std::fprintf(stderr, "sonata: ordering a free on cuda:%d failed: %s\n", device_,
                   failure.what());
      return nullptr;
    }
  }
  bool event_done(EventHandle event, bool wait) override {
    const CudaDeviceGuard on_device(Device::cuda(device_));
    const auto cuda_event = static_cast<cudaEvent_t>(event);
    if (wait) return CUDA_RELEASE(cudaEventSynchronize(cuda_event));
    return CUDA_QUERY(cudaEventQuery(cuda_event));
  }
  void destroy_event(EventHandle event) override {
    const CudaDeviceGuard on_device(Device::cuda(device_));
    CUDA_RELEASE(cudaEventDestroy(static_cast<cudaEvent_t>(event)));
  }
  // The emulator's memory checks see each tensor as its own allocation (and a cached block
  // as freed memory); a card has no such call (compute-sanitizer would need NVTX's memory
  // API), so they are no-ops there.
  void block_handed_out([[maybe_unused]] void* data, [[maybe_unused]] size_t bytes,
                        [[maybe_unused]] StreamHandle stream) override {
#if defined(SONATA_CUDA_EMU)
    CUDA_RELEASE(sonataEmuRegionAllocated(data, bytes, static_cast<cudaStream_t>(stream)));
#endif
  }
  void block_cached([[maybe_unused]] void* data, size_t,
                    [[maybe_unused]] StreamHandle stream) override {
#if defined(SONATA_CUDA_EMU)
    const CudaDeviceGuard on_device(Device::cuda(device_));
    CUDA_RELEASE(sonataEmuRegionFreed(data, static_cast<cudaStream_t>(stream)));
#endif
  }

 private:
  int device_;
};

struct DeviceCache {
  explicit DeviceCache(int device) : driver(device), cache(driver) {}
  CudaCacheDriver driver;
  BlockCache cache;
};

// One cache per device, made on first use and never destroyed (tensors held by statics may
// be freed during exit).
BlockCache& device_cache(int device) {
  static std::array<DeviceCache*, kMaxDevices> caches{};
  static std::array<std::once_flag, kMaxDevices> made;
  std::call_once(made[size_t(device)], [device] {
    caches[size_t(device)] = new DeviceCache(device);
    // Another allocation that runs out of memory (a library workspace) empties the cache
    // before its retry, as PyTorch's emptyCache-and-retry frees its cached blocks.
    kernels::cuda::set_cache_release([](int on) { cuda_empty_cache(on); });
  });
  return caches[size_t(device)]->cache;
}

// The record-stream rule's device calls (StreamUses::release): the streams that used the
// block are collected, and the cache records an event on each before the block may be
// reused.
class CacheOrdering final : public StreamOrdering {
 public:
  explicit CacheOrdering(int device) : device_(device) {}
  bool wait_for(StreamHandle, StreamHandle used) override {
    used_on_.push_back(used);
    return true;
  }
  void free_on(void* data, StreamHandle) override {
    try {
      device_cache(device_).free(data, used_on_);
    } catch (const std::exception& failure) {
      std::fprintf(stderr, "sonata: freeing a tensor on cuda:%d failed: %s\n", device_,
                   failure.what());
    }
  }

 private:
  int device_;
  std::vector<StreamHandle> used_on_;
};
}  // namespace

CudaBlock cuda_allocate(size_t nbytes, int device) {
  SONATA_CHECK(device >= 0 && device < kMaxDevices, "CUDA device index ", device, " out of range");
  CudaBlock block{nullptr, nbytes, device, current_stream(device)};  // selects the device
  // The pool's release threshold still matters: the cache's segments come from it, and an
  // emptied cache gives them back there (kernels/common/pool_retry.h).
  kernels::cuda::configure_device_pool(device);
  if (nbytes > 0) block.data = device_cache(device).allocate(nbytes, block.stream);
  DeviceCounters& c = g_counters[device];
  const int64_t now = c.allocated += int64_t(nbytes);
  int64_t peak = c.peak.load();
  while (now > peak && !c.peak.compare_exchange_weak(peak, now)) {
  }
  ++c.allocations;
  return block;
}

void cuda_free(const CudaBlock& block, StreamUses& uses) {
  if (block.data) {
    CacheOrdering ordering(block.device);
    uses.release(block.data, ordering);
  }
  g_counters[block.device].allocated -= int64_t(block.nbytes);
}

MemoryStats cuda_memory_stats(int device) {
  const DeviceCounters& c = g_counters.at(size_t(device));
  return {c.allocated.load(), c.peak.load(), c.allocations.load(),
          cuda_cache_stats(device).cached_bytes};
}

void cuda_reset_peak_memory_stats(int device) {
  DeviceCounters& c = g_counters.at(size_t(device));
  c.peak = c.allocated.load();
  device_cache(device).reset_peak();
}

CudaCacheStats cuda_cache_stats(int device) {
  SONATA_CHECK(device >= 0 && device < kMaxDevices, "CUDA device index ", device, " out of range");
  return device_cache(device).stats();
}

void cuda_empty_cache(int device) {
  SONATA_CHECK(device >= 0 && device < kMaxDevices, "CUDA device index ", device, " out of range");
  device_cache(device).empty_cache(/*wait_events=*/true);
}

}  // namespace sonata

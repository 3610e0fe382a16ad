#include "engine/cuda/cuda_allocator.h"

#include <array>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <mutex>

#include "base/cuda_check.h"
#include "base/cuda_status.h"
#include "engine/allocator.h"
#include "engine/cuda/stream.h"
#include "engine/device_guard.h"

namespace sonata {
namespace {
constexpr int kMaxDevices = 64;

struct DeviceCounters {
  std::atomic<int64_t> allocated{0};
  std::atomic<int64_t> peak{0};
  std::atomic<int64_t> allocations{0};
};
std::array<DeviceCounters, kMaxDevices> g_counters;
std::array<std::once_flag, kMaxDevices> g_pool_configured;

// Keep freed memory in the pool instead of returning it to the driver at every sync, so the
// step loop allocates from cache like PyTorch's caching allocator.
void configure_pool(int device) {
  std::call_once(g_pool_configured[device], [device] {
    cudaMemPool_t pool;
    CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, device));
    uint64_t threshold = UINT64_MAX;
    CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
  });
}

// The record-stream rule's device calls, on the block's device.
class CudaStreamOrdering final : public StreamOrdering {
 public:
  explicit CudaStreamOrdering(int device) : device_(device) {}

  bool wait_for(StreamHandle waiter, StreamHandle used) override {
    // The event belongs to the used stream's device, which is the block's: select it, since
    // the last reference may be dropped on any thread.
    try {
      const CudaDeviceGuard on_device(Device::cuda(device_));
      cudaEvent_t event = nullptr;
      if (!CUDA_RELEASE(cudaEventCreateWithFlags(&event, cudaEventDisableTiming))) return false;
      const bool ordered =
          CUDA_RELEASE(cudaEventRecord(event, static_cast<cudaStream_t>(used))) &&
          CUDA_RELEASE(cudaStreamWaitEvent(static_cast<cudaStream_t>(waiter), event, 0));
      // The wait holds what it needs: the event may go at once.
      CUDA_RELEASE(cudaEventDestroy(event));
      return ordered;
    } catch (const std::exception& failure) {
      std::fprintf(stderr, "sonata: ordering a free on cuda:%d failed: %s\n", device_,
                   failure.what());
      return false;
    }
  }
  void free_on(void* data, StreamHandle stream) override {
    CUDA_RELEASE(cudaFreeAsync(data, static_cast<cudaStream_t>(stream)));
  }

 private:
  int device_;
};
}  // namespace

CudaBlock cuda_allocate(size_t nbytes, int device) {
  SONATA_CHECK(device >= 0 && device < kMaxDevices, "CUDA device index ", device, " out of range");
  configure_pool(device);
  CudaBlock block{nullptr, nbytes, device, current_stream(device)};
  if (nbytes > 0) CUDA_CHECK(cudaMallocAsync(&block.data, nbytes, block.stream));
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
    CudaStreamOrdering ordering(block.device);
    uses.release(block.data, ordering);
  }
  g_counters[block.device].allocated -= int64_t(block.nbytes);
}

MemoryStats cuda_memory_stats(int device) {
  const DeviceCounters& c = g_counters.at(size_t(device));
  return {c.allocated.load(), c.peak.load(), c.allocations.load()};
}

void cuda_reset_peak_memory_stats(int device) {
  DeviceCounters& c = g_counters.at(size_t(device));
  c.peak = c.allocated.load();
}

}  // namespace sonata

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
#include "kernels/cuda/device_pool.h"

namespace sonata {
namespace {
constexpr int kMaxDevices = 64;

struct DeviceCounters {
  std::atomic<int64_t> allocated{0};
  std::atomic<int64_t> peak{0};
  std::atomic<int64_t> allocations{0};
};
std::array<DeviceCounters, kMaxDevices> g_counters;

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
  CudaBlock block{nullptr, nbytes, device, current_stream(device)};  // selects the device
  // The pool keeps freed memory cached, so the step loop allocates from cache like
  // PyTorch's caching allocator, up to a threshold that leaves the libraries and other
  // processes room (kernels/common/pool_retry.h); out of memory trims it and retries once.
  kernels::cuda::configure_device_pool(device);
  if (nbytes > 0)
    kernels::cuda::allocate_retrying("a tensor", nbytes, device, [&] {
      return cudaMallocAsync(&block.data, nbytes, block.stream);
    });
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

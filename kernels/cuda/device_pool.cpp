#include "kernels/cuda/device_pool.h"

#include <array>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <mutex>

#include "base/cuda_check.h"
#include "base/error.h"
#include "kernels/common/pool_retry.h"

namespace sonata::kernels::cuda {
namespace {

constexpr int kMaxDevices = 64;

cudaMemPool_t default_pool(int device) {
  cudaMemPool_t pool = nullptr;
  CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, device));
  return pool;
}

std::atomic<CacheRelease> g_cache_release{nullptr};

}  // namespace

void set_cache_release(CacheRelease release) {
  g_cache_release = release;
}

void configure_device_pool(int device) {
  static std::array<std::once_flag, kMaxDevices> configured;
  SONATA_CHECK(device >= 0 && device < kMaxDevices, "CUDA device index ", device, " out of range");
  std::call_once(configured[size_t(device)], [device] {
    cudaDeviceProp properties{};
    CUDA_CHECK(cudaGetDeviceProperties(&properties, device));
    uint64_t threshold = pool_release_threshold(uint64_t(properties.totalGlobalMem),
                                                std::getenv("SONATA_CUDA_POOL_CACHE_MB"));
    CUDA_CHECK(
        cudaMemPoolSetAttribute(default_pool(device), cudaMemPoolAttrReleaseThreshold, &threshold));
  });
}

void allocate_retrying(const char* what, size_t bytes, int device,
                       const std::function<cudaError_t()>& allocate) {
  PoolRetryCalls calls;
  calls.allocate = [&] {
    const cudaError_t status = allocate();
    if (status != cudaErrorMemoryAllocation) {
      CUDA_CHECK(status);
      return true;
    }
    (void)cudaGetLastError();  // an answer, not an error for a later launch check
    return false;
  };
  calls.synchronize = [device] {
    // Blocks cached above the pool go back to it first (in stream order), so the
    // synchronisation completes their frees and the trim returns them to the device.
    if (const CacheRelease release = g_cache_release.load()) release(device);
    CUDA_CHECK(cudaDeviceSynchronize());
  };
  calls.trim = [device] { CUDA_CHECK(cudaMemPoolTrimTo(default_pool(device), 0)); };
  calls.usage = [device] {
    PoolUsage usage;
    const cudaMemPool_t pool = default_pool(device);
    uint64_t value = 0;  // cuuint64_t, as these attributes take
    if (cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &value) == cudaSuccess)
      usage.used = value;
    if (cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &value) == cudaSuccess)
      usage.reserved = value;
    size_t free = 0, total = 0;
    if (cudaMemGetInfo(&free, &total) == cudaSuccess)
      usage.device_free = free, usage.device_total = total;
    (void)cudaGetLastError();
    return usage;
  };
  allocate_with_retry(what, bytes, device, calls);
}

}  // namespace sonata::kernels::cuda

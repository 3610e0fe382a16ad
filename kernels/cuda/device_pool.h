#pragma once
// The device's stream-ordered memory pool (cudaDeviceGetDefaultMemPool): its release
// threshold, and allocation with one retry after trimming it (kernels/common/pool_retry.h).
#include <cuda_runtime_api.h>

#include <cstddef>
#include <functional>

namespace sonata::kernels::cuda {

// Sets the default pool's release threshold (pool_release_threshold) once per device.
void configure_device_pool(int device);

// What releases a device's cached memory above the pool (the engine's block cache,
// cuda_empty_cache): allocate_retrying calls it before trimming the pool. Set once.
using CacheRelease = void (*)(int device);
void set_cache_release(CacheRelease release);

// Runs `allocate` (cudaMallocAsync, cudaMalloc...) for `bytes`; on cudaErrorMemoryAllocation
// empties the cache above the pool (set_cache_release), synchronises the device, trims its pool to
// 0 and runs it once more; throws naming `what`, the size, the pool's used/reserved bytes and the
// device when that fails too. Other errors throw as CUDA_CHECK. `device` must be the calling
// thread's current device.
void allocate_retrying(const char* what, size_t bytes, int device,
                       const std::function<cudaError_t()>& allocate);

}  // namespace sonata::kernels::cuda

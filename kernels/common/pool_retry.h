#pragma once
// What a device allocation does when the device is out of memory, as plain C++ (the CUDA
// calls are injected, so the CPU tests drive it). The stream-ordered pool caches freed
// blocks, and memory freed on other streams is only returned once their work is done: on
// cudaErrorMemoryAllocation the allocator synchronises the device (pending frees complete),
// trims the pool to nothing it does not use (cudaMemPoolTrimTo(pool, 0)), and tries once
// more, as PyTorch's cudaMallocAsync backend and its caching allocator's emptyCache-and-retry
// do. A second failure is an error naming the request, the pool and the device.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace sonata::kernels {

struct PoolUsage {
  uint64_t used = 0;      // cudaMemPoolAttrUsedMemCurrent: in live allocations
  uint64_t reserved = 0;  // cudaMemPoolAttrReservedMemCurrent: held from the driver
  uint64_t device_free = 0, device_total = 0;  // cudaMemGetInfo
};

struct PoolRetryCalls {
  std::function<bool()> allocate;  // true on success, false when out of memory (else throws)
  std::function<void()> synchronize;
  std::function<void()> trim;  // release every unused byte of the pool
  std::function<PoolUsage()> usage;
};

// Allocates through `calls`; on out of memory synchronises, trims and retries once; throws
// (out_of_memory_message) when the retry fails too.
void allocate_with_retry(const char* what, size_t bytes, int device, const PoolRetryCalls& calls);

// "CUDA out of memory on cuda:0 allocating 1.5 GiB for a tensor, after releasing the memory
// pool's cache: the pool holds 70.2 GiB of which 70.1 GiB in use; the device has 0.4 GiB
// free of 79.1 GiB ..."
std::string out_of_memory_message(const char* what, size_t bytes, int device,
                                  const PoolUsage& usage);

// The pool's release threshold for a device of `total` bytes: what the pool may keep cached
// across a synchronisation. Everything but 1/16 of the device (at least 1 GiB): the step
// loop still allocates from cache, and the rest goes back to the driver at the next
// synchronisation, where cuBLAS, cuDNN, NCCL's buffers (plain cudaMalloc, often late: NCCL
// at its first large all-reduce) and other processes can get it.
uint64_t pool_release_threshold(uint64_t total);
// The same, capped at `cache_mb` MiB when that is set (the environment variable
// SONATA_CUDA_POOL_CACHE_MB, its text): several processes on one card (ctest -j, the GPU
// check) then leave each other room instead of each caching 15/16 of it. Not a whole number
// of MiB is an error naming the variable.
uint64_t pool_release_threshold(uint64_t total, const char* cache_mb);

}  // namespace sonata::kernels

#pragma once
// Memory for tensors. CPU: 64-byte aligned blocks; blocks of 1 MiB and more are cached and
// reused by size (see cpu_allocator.cpp for why). CUDA: a caching allocator (per-stream
// size classes, engine/block_cache.h, as PyTorch's) in front of cudaMallocAsync's pool, with
// current and peak statistics like torch.cuda.memory_allocated / max_memory_allocated;
// memory used on a stream other than its own is recorded (Tensor::record_stream,
// engine/stream_uses.h) and not reused before that work is done. Pinned host memory: a caching pool
// whose blocks are reused only after the copies that read them end.
#include <cstddef>
#include <cstdint>

namespace sonata {

inline constexpr size_t kCpuAlignment = 64;

void* cpu_allocate(size_t nbytes);
// `nbytes` is the size given to cpu_allocate.
void cpu_free(void* data, size_t nbytes);

struct MemoryStats {
  int64_t allocated_bytes = 0;       // held by live tensors now
  int64_t peak_allocated_bytes = 0;  // highest allocated_bytes since the last reset
  int64_t allocations = 0;           // count of allocate calls
  int64_t cached_bytes = 0;          // freed but kept for reuse (CPU cache; CUDA block cache)
};

MemoryStats cpu_memory_stats();
// False in AddressSanitizer builds, which must see every free to catch a use after it.
bool cpu_cache_enabled();
void cpu_reset_peak_memory_stats();
// Returns every cached CPU block to the system.
void cpu_release_cached_memory();
// The most freed memory the CPU cache keeps (default: a quarter of physical memory, or
// SONATA_CPU_CACHE_MB). Lowering it releases blocks at once. Returns the previous limit.
size_t cpu_set_cache_limit(size_t bytes);

// Only meaningful with the CUDA backend; all-zero otherwise.
MemoryStats cuda_memory_stats(int device);
void cuda_reset_peak_memory_stats(int device);  // also the cache's peak_reserved_bytes

// The CUDA block cache of a device (engine/block_cache.h) since the process started.
struct CudaCacheStats {
  int64_t hits = 0;            // allocations served from cached blocks, no driver call
  int64_t misses = 0;          // allocations that took a new segment (cudaMallocAsync)
  int64_t segment_frees = 0;   // segments given back (cuda_empty_cache, out of memory)
  int64_t reserved_bytes = 0;  // in segments now
  int64_t peak_reserved_bytes = 0;
  int64_t cached_bytes = 0;    // in free blocks now (reusable without a driver call)
  int64_t waiting_blocks = 0;  // freed, waiting for other streams' events (record_stream)
};
CudaCacheStats cuda_cache_stats(int device);
// Gives every segment with no tensor in it back to the device's pool (PyTorch's
// torch.cuda.empty_cache); waits on the host for the events of blocks used on other streams.
void cuda_empty_cache(int device);

}  // namespace sonata

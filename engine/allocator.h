#pragma once
// Memory for tensors. CPU: 64-byte aligned blocks; blocks of 1 MiB and more are cached and
// reused by size (see cpu_allocator.cpp for why). CUDA: a stream-ordered allocator on
// cudaMallocAsync's pool (kept, not returned to the driver, between steps) with current and
// peak statistics like torch.cuda.memory_allocated / max_memory_allocated; memory used on a
// stream other than its own is recorded (Tensor::record_stream, engine/stream_uses.h) and
// its free waits for that work. Pinned host memory: a caching pool whose blocks are reused
// only after the copies that read them end.
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
  int64_t cached_bytes = 0;          // freed but kept for reuse (CPU cache; 0 on CUDA)
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
void cuda_reset_peak_memory_stats(int device);

}  // namespace sonata

#pragma once
// Memory for tensors. CPU: 64-byte aligned blocks. CUDA: a stream-ordered allocator on
// cudaMallocAsync's pool (kept, not returned to the driver, between steps) with current and
// peak statistics like torch.cuda.memory_allocated / max_memory_allocated. Pinned host
// memory: a caching pool whose blocks are reused only after the copies that read them end.
#include <cstddef>
#include <cstdint>

namespace sonata {

inline constexpr size_t kCpuAlignment = 64;

void* cpu_allocate(size_t nbytes);
void cpu_free(void* data);

struct MemoryStats {
  int64_t allocated_bytes = 0;       // held by live tensors now
  int64_t peak_allocated_bytes = 0;  // highest allocated_bytes since the last reset
  int64_t allocations = 0;           // count of allocate calls
};

// Only meaningful with the CUDA backend; all-zero otherwise.
MemoryStats cuda_memory_stats(int device);
void cuda_reset_peak_memory_stats(int device);

}  // namespace sonata

#include "engine/allocator.h"

#include <cstdlib>
#include <new>

#include "base/error.h"

namespace sonata {

void* cpu_allocate(size_t nbytes) {
  if (nbytes == 0) nbytes = kCpuAlignment;  // a valid, unique pointer for empty tensors
  const size_t rounded = (nbytes + kCpuAlignment - 1) / kCpuAlignment * kCpuAlignment;
  void* data = std::aligned_alloc(kCpuAlignment, rounded);
  if (!data) throw Error(str("out of CPU memory allocating ", nbytes, " bytes"));
  return data;
}

void cpu_free(void* data) { std::free(data); }

#if !SONATA_WITH_CUDA
MemoryStats cuda_memory_stats(int) { return {}; }
void cuda_reset_peak_memory_stats(int) {}
#endif

}  // namespace sonata

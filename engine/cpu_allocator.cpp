#include "engine/allocator.h"

#include <malloc.h>

#include <cstdlib>
#include <mutex>
#include <new>

#include "base/error.h"

namespace sonata {

namespace {
// glibc serves large blocks with fresh mmaps and unmaps them on free, so every activation of a
// training step would page-fault its way in again (a quarter of a VGG step's CPU time).
// Keeping freed memory in the heap makes the step loop allocate from warm pages, like
// PyTorch's caching allocators do.
void keep_freed_memory() {
  static std::once_flag once;
  std::call_once(once, [] {
    mallopt(M_MMAP_THRESHOLD, 1 << 30);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
  });
}
}  // namespace

void* cpu_allocate(size_t nbytes) {
  keep_freed_memory();
  if (nbytes == 0) nbytes = kCpuAlignment;  // a valid, unique pointer for empty tensors
  const size_t rounded = (nbytes + kCpuAlignment - 1) / kCpuAlignment * kCpuAlignment;
  void* data = std::aligned_alloc(kCpuAlignment, rounded);
  if (!data) throw Error(str("out of CPU memory allocating ", nbytes, " bytes"));
  return data;
}

void cpu_free(void* data) {
  std::free(data);
}

#if !SONATA_WITH_CUDA
MemoryStats cuda_memory_stats(int) {
  return {};
}
void cuda_reset_peak_memory_stats(int) {}
#endif

}  // namespace sonata

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>

#include "base/error.h"
#include "engine/allocator.h"

namespace sonata {
namespace {

// glibc serves blocks above its mmap threshold (at most 32 MiB, whatever mallopt is asked)
// with fresh mmaps and unmaps them on free, so every large activation and gradient of a
// training step page-faults its way in again and the kernel zeroes it first: a fifth of a
// VGG19_BN CPU step. Large blocks are therefore cached here and reused by size, as PyTorch's
// CUDA caching allocator does; small ones stay with malloc, whose arenas already reuse them.
constexpr size_t kCachedMin = size_t(1) << 20;
// Large blocks are 2 MiB-aligned multiples of 2 MiB so transparent huge pages can back them
// (512 times fewer page faults on first touch) and nearby sizes share cached blocks.
constexpr size_t kHugePage = size_t(2) << 20;

// AddressSanitizer must see every free to catch a use after it.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kCacheEnabled = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kCacheEnabled = false;
#else
constexpr bool kCacheEnabled = true;
#endif
#else
constexpr bool kCacheEnabled = true;
#endif

size_t default_cache_limit() {
  if (const char* mb = std::getenv("SONATA_CPU_CACHE_MB")) {
    char* end = nullptr;
    const unsigned long long value = std::strtoull(mb, &end, 10);
    SONATA_CHECK(end != mb && *end == '\0', "SONATA_CPU_CACHE_MB='", mb,
                 "' is not a whole number of MiB");
    return size_t(value) << 20;
  }
  const long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGESIZE);
  return pages > 0 && page_size > 0 ? size_t(pages) * size_t(page_size) / 4 : size_t(1) << 30;
}

class CpuCache {
 public:
  static CpuCache& instance() {
    static CpuCache* cache = new CpuCache();  // never destroyed: tensors may outlive statics
    return *cache;
  }

  void* allocate(size_t nbytes) {
    const bool large = nbytes >= kCachedMin;
    const size_t rounded = large ? round_up(nbytes, kHugePage) : round_up(nbytes, kCpuAlignment);
    std::lock_guard<std::mutex> lock(mutex_);
    size_t held = rounded;
    void* data = large && kCacheEnabled ? take_cached(rounded, held) : nullptr;
    if (!data) data = allocate_fresh(rounded, large);
    if (large) large_blocks_[data] = held;
    stats_.allocations += 1;
    stats_.allocated_bytes += int64_t(held);
    stats_.peak_allocated_bytes = std::max(stats_.peak_allocated_bytes, stats_.allocated_bytes);
    return data;
  }

  void release(void* data, size_t nbytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto block = large_blocks_.find(data);
    if (block == large_blocks_.end()) {
      stats_.allocated_bytes -= int64_t(round_up(nbytes, kCpuAlignment));
      std::free(data);
      return;
    }
    const size_t held = block->second;
    large_blocks_.erase(block);
    stats_.allocated_bytes -= int64_t(held);
    if (!kCacheEnabled || held > limit_) {
      std::free(data);
      return;
    }
    cached_.emplace(held, data);
    stats_.cached_bytes += int64_t(held);
    trim_to(limit_);
  }

  MemoryStats stats() {
    std::lock_guard<std::mutex> lock(mutex_);
    return stats_;
  }
  void reset_peak() {
    std::lock_guard<std::mutex> lock(mutex_);
    stats_.peak_allocated_bytes = stats_.allocated_bytes;
  }
  size_t set_limit(size_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    const size_t previous = limit_;
    limit_ = bytes;
    trim_to(limit_);
    return previous;
  }
  void release_cached() {
    std::lock_guard<std::mutex> lock(mutex_);
    trim_to(0);
  }

 private:
  static size_t round_up(size_t n, size_t unit) {
    return (std::max<size_t>(n, 1) + unit - 1) / unit * unit;
  }

  // The smallest cached block that fits, if it wastes less than a quarter of itself; `held`
  // becomes its whole size.
  void* take_cached(size_t rounded, size_t& held) {
    const auto it = cached_.lower_bound(rounded);
    if (it == cached_.end() || it->first - rounded > it->first / 4) return nullptr;
    void* data = it->second;
    held = it->first;
    stats_.cached_bytes -= int64_t(held);
    cached_.erase(it);
    return data;
  }

  void* allocate_fresh(size_t rounded, bool large) {
    void* data = std::aligned_alloc(large ? kHugePage : kCpuAlignment, rounded);
    if (!data && !cached_.empty()) {  // memory held by the cache is better spent here
      trim_to(0);
      data = std::aligned_alloc(large ? kHugePage : kCpuAlignment, rounded);
    }
    if (!data) throw Error(str("out of CPU memory allocating ", rounded, " bytes"));
    if (large) madvise(data, rounded, MADV_HUGEPAGE);  // a hint: failure only costs speed
    return data;
  }

  void trim_to(size_t bytes) {
    while (!cached_.empty() && size_t(stats_.cached_bytes) > bytes) {
      auto largest = std::prev(cached_.end());
      stats_.cached_bytes -= int64_t(largest->first);
      std::free(largest->second);
      cached_.erase(largest);
    }
  }

  std::mutex mutex_;
  std::multimap<size_t, void*> cached_;             // block size -> free block
  std::unordered_map<void*, size_t> large_blocks_;  // live large block -> its size
  size_t limit_ = default_cache_limit();
  MemoryStats stats_;
};

}  // namespace

void* cpu_allocate(size_t nbytes) {
  return CpuCache::instance().allocate(nbytes);
}

void cpu_free(void* data, size_t nbytes) {
  CpuCache::instance().release(data, nbytes);
}

bool cpu_cache_enabled() {
  return kCacheEnabled;
}

MemoryStats cpu_memory_stats() {
  return CpuCache::instance().stats();
}

void cpu_reset_peak_memory_stats() {
  CpuCache::instance().reset_peak();
}

void cpu_release_cached_memory() {
  CpuCache::instance().release_cached();
}

size_t cpu_set_cache_limit(size_t bytes) {
  return CpuCache::instance().set_limit(bytes);
}

#if !SONATA_WITH_CUDA
MemoryStats cuda_memory_stats(int) {
  return {};
}
void cuda_reset_peak_memory_stats(int) {}
CudaCacheStats cuda_cache_stats(int) {
  return {};
}
void cuda_empty_cache(int) {}
#endif

}  // namespace sonata

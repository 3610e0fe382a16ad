#include "kernels/common/pool_retry.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "base/error.h"

namespace sonata::kernels {
namespace {

std::string gib(uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f GiB", double(bytes) / double(uint64_t(1) << 30));
  return text;
}

}  // namespace

void allocate_with_retry(const char* what, size_t bytes, int device, const PoolRetryCalls& calls) {
  if (calls.allocate()) return;
  calls.synchronize();
  calls.trim();
  if (calls.allocate()) return;
  throw Error(out_of_memory_message(what, bytes, device, calls.usage()));
}

std::string out_of_memory_message(const char* what, size_t bytes, int device,
                                  const PoolUsage& usage) {
  return str("CUDA out of memory on cuda:", device, " allocating ", gib(bytes), " (", bytes,
             " bytes) for ", what,
             ", after synchronising and releasing the memory pool's cache: "
             "the pool holds ",
             gib(usage.reserved), " of which ", gib(usage.used), " in use; the device has ",
             gib(usage.device_free), " free of ", gib(usage.device_total),
             " (the rest: other processes, the CUDA context, cuBLAS, cuDNN, cuFFT and NCCL); use a "
             "smaller --batch-size or --precision bf16");
}

uint64_t pool_release_threshold(uint64_t total) {
  const uint64_t headroom = std::max<uint64_t>(total / 16, uint64_t(1) << 30);
  return total > headroom ? total - headroom : 0;
}

uint64_t pool_release_threshold(uint64_t total, const char* cache_mb) {
  const uint64_t threshold = pool_release_threshold(total);
  if (cache_mb == nullptr || *cache_mb == '\0') return threshold;
  char* end = nullptr;
  errno = 0;
  const unsigned long long mb = std::strtoull(cache_mb, &end, 10);
  SONATA_CHECK(*end == '\0' && errno == 0 && std::isdigit(static_cast<unsigned char>(*cache_mb)) &&
                   mb < (uint64_t(1) << 44),
               "SONATA_CUDA_POOL_CACHE_MB must be a whole number of MiB, got '", cache_mb, "'");
  return std::min<uint64_t>(threshold, uint64_t(mb) << 20);
}

}  // namespace sonata::kernels

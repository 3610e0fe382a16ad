#include "engine/cuda/pinned_pool.h"

#include <bit>

#include "base/cuda_check.h"
#include "base/cuda_status.h"

namespace sonata {

PinnedPool& PinnedPool::instance() {
  // Leaked on purpose: pinned blocks may be released by static destructors after main.
  static PinnedPool* pool = new PinnedPool();
  return *pool;
}

bool PinnedPool::ready(Block& block) {
  while (!block.pending.empty()) {
    if (!CUDA_QUERY(cudaEventQuery(block.pending.back()))) return false;
    CUDA_CHECK(cudaEventDestroy(block.pending.back()));
    block.pending.pop_back();
  }
  return true;
}

void* PinnedPool::allocate(size_t nbytes) {
  const size_t rounded = std::bit_ceil(std::max<size_t>(nbytes, 4096));
  std::lock_guard lock(mutex_);
  for (auto& [data, block] : blocks_) {
    if (!block.in_use && block.nbytes == rounded && ready(block)) {
      block.in_use = true;
      return data;
    }
  }
  void* data = nullptr;
  CUDA_CHECK(cudaHostAlloc(&data, rounded, cudaHostAllocDefault));
  blocks_[data] = Block{rounded, true, {}};
  return data;
}

void PinnedPool::release(void* data) {
  std::lock_guard lock(mutex_);
  auto it = blocks_.find(data);
  if (it != blocks_.end()) it->second.in_use = false;
}

void PinnedPool::record_use(void* data, cudaStream_t stream) {
  std::lock_guard lock(mutex_);
  // `data` may point inside a block (a view): find the block that contains it.
  auto it = blocks_.upper_bound(data);
  if (it == blocks_.begin()) return;
  --it;
  if (static_cast<char*>(data) >= static_cast<char*>(it->first) + it->second.nbytes) return;
  cudaEvent_t event;
  CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  CUDA_CHECK(cudaEventRecord(event, stream));
  it->second.pending.push_back(event);
}

size_t PinnedPool::cached_bytes() const {
  std::lock_guard lock(mutex_);
  size_t total = 0;
  for (const auto& [data, block] : blocks_) total += block.nbytes;
  return total;
}

}  // namespace sonata

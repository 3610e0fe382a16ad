#include "engine/block_cache.h"

#include <algorithm>
#include <functional>
#include <tuple>

#include "base/error.h"

namespace sonata {

bool BlockCache::BySize::operator()(const Block* a, const Block* b) const {
  // Streams first, so that one stream's blocks are a contiguous run found by lower_bound.
  const auto key = [](const Block* x) {
    return std::make_tuple(reinterpret_cast<uintptr_t>(x->stream), x->size,
                           reinterpret_cast<uintptr_t>(x->data));
  };
  return key(a) < key(b);
}

size_t BlockCache::round_size(size_t bytes) {
  return std::max(kMinBlock, (bytes + kMinBlock - 1) / kMinBlock * kMinBlock);
}

size_t BlockCache::segment_size(size_t rounded) {
  if (rounded <= kSmallRequest) return kSmallSegment;
  if (rounded < kMinLargeSegment) return kMediumSegment;
  return (rounded + kRoundLarge - 1) / kRoundLarge * kRoundLarge;
}

BlockCache::~BlockCache() {
  // Only a test's cache ends (the devices' live for the process): the bookkeeping goes,
  // and the fake memory with the test's driver.
  std::set<Block*> blocks(small_pool_.begin(), small_pool_.end());
  blocks.insert(large_pool_.begin(), large_pool_.end());
  blocks.insert(abandoned_.begin(), abandoned_.end());
  for (const auto& [data, block] : live_) blocks.insert(block);
  for (const PendingEvent& pending : pending_) {
    driver_.destroy_event(pending.event);
    blocks.insert(pending.block);
  }
  for (Block* block : blocks) delete block;
}

void* BlockCache::allocate(size_t bytes, StreamHandle stream) {
  SONATA_CHECK(bytes > 0, "BlockCache::allocate: a block of 0 bytes");
  const std::lock_guard lock(mutex_);
  poll_events(false);
  const size_t size = round_size(bytes);
  const bool small = size <= kSmallRequest;
  Block* block = take_cached(size, stream, small);
  if (block) {
    ++stats_.hits;
  } else {
    block = new_segment(size, stream, small);
    ++stats_.misses;
  }
  block = split(block, size);
  block->allocated = true;
  stats_.cached_bytes -= int64_t(block->size);
  live_.emplace(block->data, block);
  driver_.block_handed_out(block->data, bytes, stream);
  return block->data;
}

BlockCache::Block* BlockCache::take_cached(size_t size, StreamHandle stream, bool small) {
  Pool& pool = pool_of(small);
  Block probe;
  probe.stream = stream;
  probe.size = size;
  const auto found = pool.lower_bound(&probe);
  if (found == pool.end() || (*found)->stream != stream) return nullptr;
  Block* block = *found;
  pool.erase(found);
  return block;
}

BlockCache::Block* BlockCache::new_segment(size_t size, StreamHandle stream, bool small) {
  const size_t bytes = segment_size(size);
  void* data = driver_.allocate_segment(bytes, stream, false);
  if (!data) {
    // Out of memory: what the cache holds goes back to the pool, and the driver's retry
    // (which synchronises and trims the pool) runs once more; its failure throws.
    release_segments();
    data = driver_.allocate_segment(bytes, stream, true);
  }
  auto* block = new Block;
  block->data = static_cast<char*>(data);
  block->size = bytes;
  block->stream = stream;
  block->small = small;
  stats_.reserved_bytes += int64_t(bytes);
  stats_.peak_reserved_bytes = std::max(stats_.peak_reserved_bytes, stats_.reserved_bytes);
  stats_.cached_bytes += int64_t(bytes);
  return block;
}

BlockCache::Block* BlockCache::split(Block* block, size_t size) {
  const size_t rest = block->size - size;
  // PyTorch's rule: a small block's rest is kept from 512 bytes on; a large block's only
  // above 1 MiB (smaller rests of large blocks would fragment the large pool).
  if (block->small ? rest < kMinBlock : rest <= kSmallRequest) return block;
  auto* remaining = new Block(*block);
  remaining->data = block->data + size;
  remaining->size = rest;
  remaining->prev = block;
  remaining->next = block->next;
  if (block->next) block->next->prev = remaining;
  block->next = remaining;
  block->size = size;
  pool_of(block->small).insert(remaining);
  return block;
}

void BlockCache::free(void* data, const std::vector<StreamHandle>& used_on) {
  const std::lock_guard lock(mutex_);
  const auto found = live_.find(data);
  SONATA_CHECK(found != live_.end(), "BlockCache::free: ", data, " is not a live block");
  Block* block = found->second;
  live_.erase(found);
  block->allocated = false;
  for (StreamHandle used : used_on) {
    if (used == block->stream) continue;
    EventHandle event = driver_.record_event(used);
    if (!event) {
      // The other stream's work cannot be waited for: the block is never reused (a leak
      // rather than a race), as StreamUses::release does.
      block->pending_events = -1;
      abandoned_.push_back(block);
      return;
    }
    ++block->pending_events;
    pending_.push_back({event, block});
  }
  if (block->pending_events > 0) {
    ++stats_.waiting_blocks;
    return;
  }
  release_free(block);
}

void BlockCache::release_free(Block* block) {
  driver_.block_cached(block->data, block->size, block->stream);
  stats_.cached_bytes += int64_t(block->size);
  Pool& pool = pool_of(block->small);
  const auto merge = [&](Block* from, Block* into) {  // `from` follows `into`
    into->size += from->size;
    into->next = from->next;
    if (from->next) from->next->prev = into;
    delete from;
  };
  const auto is_free = [](const Block* b) { return b && !b->allocated && b->pending_events == 0; };
  if (is_free(block->next)) {
    pool.erase(block->next);
    merge(block->next, block);
  }
  if (is_free(block->prev)) {
    Block* prev = block->prev;
    pool.erase(prev);
    merge(block, prev);
    block = prev;
  }
  pool.insert(block);
}

void BlockCache::poll_events(bool wait) {
  // Events complete in any order across streams; each is polled (PyTorch stops at the first
  // pending one, which is equivalent for one stream and only slower to notice otherwise).
  for (auto it = pending_.begin(); it != pending_.end();) {
    if (!driver_.event_done(it->event, wait)) {
      ++it;
      continue;
    }
    driver_.destroy_event(it->event);
    Block* block = it->block;
    it = pending_.erase(it);
    if (--block->pending_events == 0) {
      --stats_.waiting_blocks;
      release_free(block);
    }
  }
}

void BlockCache::release_segments() {
  for (Pool* pool : {&small_pool_, &large_pool_}) {
    for (auto it = pool->begin(); it != pool->end();) {
      Block* block = *it;
      if (block->prev || block->next) {
        ++it;
        continue;
      }
      it = pool->erase(it);
      driver_.free_segment(block->data, block->stream);
      stats_.reserved_bytes -= int64_t(block->size);
      stats_.cached_bytes -= int64_t(block->size);
      ++stats_.segment_frees;
      delete block;
    }
  }
}

void BlockCache::empty_cache(bool wait_events) {
  const std::lock_guard lock(mutex_);
  poll_events(wait_events);
  release_segments();
}

CudaCacheStats BlockCache::stats() const {
  const std::lock_guard lock(mutex_);
  return stats_;
}

void BlockCache::reset_peak() {
  const std::lock_guard lock(mutex_);
  stats_.peak_reserved_bytes = stats_.reserved_bytes;
}

}  // namespace sonata

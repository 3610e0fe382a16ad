#pragma once
// The CUDA allocator's block cache, as PyTorch's CUDACachingAllocator: tensors are carved from
// segments the device's stream-ordered pool gave (cudaMallocAsync), and a freed tensor's
// block goes back to a per-stream free list, to be handed out again with no driver call.
// Without it every tensor was a cudaMallocAsync and a cudaFreeAsync (1-3 us of host time a
// pair, issue #48).
//
// Size classes (PyTorch's): requests round up to 512 bytes; those of 1 MiB or less come from
// 2 MiB segments (the small pool), larger ones from 20 MiB segments below 10 MiB, else from a
// segment of their size rounded up to 2 MiB (the large pool). A block is split when the rest
// is worth keeping (512 bytes in the small pool, more than 1 MiB in the large) and merged with
// free neighbours when freed. A block serves only the stream it was allocated on: work of
// that stream is ordered with the last owner's by the stream itself.
//
// Record-stream rule: a block also used on other streams (StreamUses) is not reused until an
// event recorded on each of them at the free has completed, polled (never waited for on
// the host) at the next allocations.
//
// No CUDA types here: the device calls are a CacheDriver (CUDA's in
// engine/cuda/cuda_allocator.cpp, a fake in the CPU tests).
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <set>
#include <unordered_map>
#include <vector>

#include "engine/allocator.h"    // CudaCacheStats
#include "engine/stream_uses.h"  // StreamHandle

namespace sonata {

using EventHandle = void*;  // a cudaEvent_t

class CacheDriver {
 public:
  virtual ~CacheDriver() = default;
  // A new segment of `bytes` for `stream` (cudaMallocAsync). Out of memory: nullptr when
  // `last_try` is false; when true, the driver's own retry runs and its failure throws.
  virtual void* allocate_segment(size_t bytes, StreamHandle stream, bool last_try) = 0;
  // Gives a segment back in `stream`'s order (cudaFreeAsync). Never throws.
  virtual void free_segment(void* data, StreamHandle stream) = 0;
  // An event recorded on `stream` now; nullptr when that failed (the block is then kept
  // out of the cache for good rather than reused early).
  virtual EventHandle record_event(StreamHandle stream) = 0;
  // Whether the event's work is done, without blocking; `wait`: block the host until it is
  // (only when the cache is emptied). A done event is destroyed by the cache with destroy.
  virtual bool event_done(EventHandle event, bool wait) = 0;
  virtual void destroy_event(EventHandle event) = 0;
  // A memory checker's view of the blocks, in `stream`'s order (the emulator's
  // sub-allocation regions, emu/include/sonata_emu_regions.h): bytes [data, data + bytes)
  // now belong to a new owner and hold nothing written / were freed into the cache.
  virtual void block_handed_out(void* data, size_t bytes, StreamHandle stream) = 0;
  virtual void block_cached(void* data, size_t bytes, StreamHandle stream) = 0;
};

class BlockCache {
 public:
  static constexpr size_t kMinBlock = 512;
  static constexpr size_t kSmallRequest = size_t(1) << 20;  // at most: the small pool
  static constexpr size_t kSmallSegment = size_t(2) << 20;
  static constexpr size_t kMediumSegment = size_t(20) << 20;
  static constexpr size_t kMinLargeSegment = size_t(10) << 20;
  static constexpr size_t kRoundLarge = size_t(2) << 20;

  explicit BlockCache(CacheDriver& driver) : driver_(driver) {}
  ~BlockCache();
  BlockCache(const BlockCache&) = delete;
  BlockCache& operator=(const BlockCache&) = delete;

  // A block of at least `bytes` (> 0) for work on `stream`. Out of memory: the cache's free
  // segments go back to the driver and the driver's last try runs (which throws).
  void* allocate(size_t bytes, StreamHandle stream);
  // `data` from allocate, used on `used_on` streams besides its own (may be empty).
  void free(void* data, const std::vector<StreamHandle>& used_on);
  // Gives back every segment with no block in use (waiting for events on the host first
  // when `wait_events`); PyTorch's emptyCache.
  void empty_cache(bool wait_events);
  CudaCacheStats stats() const;
  void reset_peak();

  static size_t round_size(size_t bytes);
  static size_t segment_size(size_t rounded);

 private:
  struct Block {
    char* data = nullptr;
    size_t size = 0;
    StreamHandle stream = nullptr;
    bool small = false;
    bool allocated = false;
    int pending_events = 0;
    Block* prev = nullptr;  // neighbours in the same segment
    Block* next = nullptr;
  };
  struct BySize {
    bool operator()(const Block* a, const Block* b) const;
  };
  using Pool = std::set<Block*, BySize>;
  struct PendingEvent {
    EventHandle event;
    Block* block;
  };

  Pool& pool_of(bool small) { return small ? small_pool_ : large_pool_; }
  Block* take_cached(size_t size, StreamHandle stream, bool small);
  Block* new_segment(size_t size, StreamHandle stream, bool small);
  Block* split(Block* block, size_t size);
  void release_free(Block* block);  // into its pool, merged with free neighbours
  void poll_events(bool wait);
  void release_segments();  // every wholly free segment back to the driver

  CacheDriver& driver_;
  mutable std::recursive_mutex mutex_;  // the driver's out-of-memory retry may re-enter
  Pool small_pool_, large_pool_;
  std::unordered_map<void*, Block*> live_;
  std::deque<PendingEvent> pending_;
  std::vector<Block*> abandoned_;  // never reused: an event could not be recorded
  CudaCacheStats stats_;
};

}  // namespace sonata

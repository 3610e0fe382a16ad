// The CUDA allocator's block cache (engine/block_cache.h) against a fake device: PyTorch's
// size classes, reuse without driver calls, per-stream free lists, the record-stream rule's
// events, splitting and merging, emptying, and the out-of-memory retry.
#include <catch2/catch.hpp>

#include <cstdint>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "engine/block_cache.h"

using namespace sonata;

namespace {

char stream_a_marker, stream_b_marker, stream_c_marker;
StreamHandle stream_a = &stream_a_marker, stream_b = &stream_b_marker, stream_c = &stream_c_marker;

constexpr size_t MiB = size_t(1) << 20;

// Fake addresses (never dereferenced), a device of `capacity` bytes, events that complete
// when the test says so, and every annotation in order.
class FakeDriver final : public CacheDriver {
 public:
  void* allocate_segment(size_t bytes, StreamHandle, bool last_try) override {
    if (in_use + bytes > capacity) {
      if (last_try) throw std::runtime_error("out of memory");
      ++refused;
      return nullptr;
    }
    in_use += bytes;
    ++segments;
    const uintptr_t base = next;
    next += bytes + 4096;  // a gap: neighbouring segments never look contiguous
    sizes[base] = bytes;
    return reinterpret_cast<void*>(base);
  }
  void free_segment(void* data, StreamHandle) override {
    in_use -= sizes.at(reinterpret_cast<uintptr_t>(data));
    sizes.erase(reinterpret_cast<uintptr_t>(data));
    ++segment_frees;
  }
  EventHandle record_event(StreamHandle stream) override {
    recorded_on.push_back(stream);
    auto* event = new int(next_event++);
    pending.insert(*event);
    return event;
  }
  bool event_done(EventHandle event, bool wait) override {
    if (wait) pending.erase(*static_cast<int*>(event));
    return pending.count(*static_cast<int*>(event)) == 0;
  }
  void destroy_event(EventHandle event) override {
    ++destroyed_events;
    delete static_cast<int*>(event);
  }
  void block_handed_out(void* data, size_t bytes, StreamHandle) override {
    notes.push_back("out " + std::to_string(offset_of(data)) + " " + std::to_string(bytes));
  }
  void block_cached(void* data, size_t bytes, StreamHandle) override {
    notes.push_back("cached " + std::to_string(offset_of(data)) + " " + std::to_string(bytes));
  }
  uintptr_t offset_of(void* data) const {
    const auto at = reinterpret_cast<uintptr_t>(data);
    auto it = sizes.upper_bound(at);
    --it;
    return at - it->first;
  }

  size_t capacity = size_t(1) << 40;
  size_t in_use = 0;
  int segments = 0, segment_frees = 0, refused = 0, destroyed_events = 0;
  std::set<int> pending;  // events not yet complete
  std::vector<StreamHandle> recorded_on;
  std::vector<std::string> notes;

 private:
  uintptr_t next = uintptr_t(1) << 32;
  int next_event = 0;
  std::map<uintptr_t, size_t> sizes;
};

char* at(void* data) {
  return static_cast<char*>(data);
}

}  // namespace

TEST_CASE("block cache: PyTorch's size classes", "[core][allocator]") {
  // c10/cuda/CUDACachingAllocator.cpp: kMinBlockSize 512, kSmallSize 1 MiB, kSmallBuffer
  // 2 MiB, kLargeBuffer 20 MiB, kMinLargeAlloc 10 MiB, kRoundLarge 2 MiB.
  CHECK(BlockCache::round_size(1) == 512);
  CHECK(BlockCache::round_size(512) == 512);
  CHECK(BlockCache::round_size(513) == 1024);
  CHECK(BlockCache::segment_size(512) == 2 * MiB);
  CHECK(BlockCache::segment_size(1 * MiB) == 2 * MiB);
  CHECK(BlockCache::segment_size(1 * MiB + 512) == 20 * MiB);
  CHECK(BlockCache::segment_size(10 * MiB - 512) == 20 * MiB);
  CHECK(BlockCache::segment_size(10 * MiB) == 10 * MiB);
  CHECK(BlockCache::segment_size(10 * MiB + 512) == 12 * MiB);
}

TEST_CASE("block cache: a freed block is reused without a driver call", "[core][allocator]") {
  FakeDriver driver;
  BlockCache cache(driver);
  void* first = cache.allocate(1000, stream_a);
  CHECK(driver.segments == 1);
  cache.free(first, {});
  void* again = cache.allocate(900, stream_a);
  CHECK(again == first);
  CHECK(driver.segments == 1);
  // Small requests share one 2 MiB segment: 2047 more blocks of 1 KiB fit in it.
  std::vector<void*> blocks;
  for (int i = 0; i < 2047; ++i) blocks.push_back(cache.allocate(1024, stream_a));
  CHECK(driver.segments == 1);
  blocks.push_back(cache.allocate(1024, stream_a));
  CHECK(driver.segments == 2);
  const CudaCacheStats stats = cache.stats();
  CHECK(stats.misses == 2);
  CHECK(stats.hits == 1 + 2047);
  CHECK(stats.reserved_bytes == int64_t(4 * MiB));
  CHECK(stats.cached_bytes == int64_t(2 * MiB - 1024));
  // The memory checker hears of each owner, with the size it asked for.
  CHECK(driver.notes[0] == "out 0 1000");
  CHECK(driver.notes[1] == "cached 0 1024");
  CHECK(driver.notes[2] == "out 0 900");
}

TEST_CASE("block cache: a block serves only the stream it was freed on", "[core][allocator]") {
  // Both ways round: the free lists are ordered by stream, so a search for either finds
  // the other's block first in one of the two.
  for (const auto& [home, other] : {std::pair{stream_a, stream_b}, std::pair{stream_b, stream_a}}) {
    FakeDriver driver;
    BlockCache cache(driver);
    void* on_home = cache.allocate(4096, home);
    cache.free(on_home, {});
    void* on_other = cache.allocate(4096, other);
    CHECK(on_other != on_home);
    CHECK(driver.segments == 2);
    CHECK(cache.allocate(4096, home) == on_home);
  }
}

TEST_CASE("block cache: a block used on other streams waits for their events",
          "[core][allocator]") {
  FakeDriver driver;
  BlockCache cache(driver);
  void* block = cache.allocate(4096, stream_a);
  cache.free(block, {stream_b, stream_c});
  CHECK(driver.recorded_on == std::vector<StreamHandle>{stream_b, stream_c});
  CHECK(cache.stats().waiting_blocks == 1);
  // Both events pending: the block is neither handed out nor merged with its neighbour.
  void* other = cache.allocate(4096, stream_a);
  CHECK((at(other) >= at(block) + 4096 || at(other) + 4096 <= at(block)));
  cache.free(other, {});
  driver.pending.erase(0);
  CHECK(cache.allocate(4096, stream_a) != block);  // one event is not enough
  driver.pending.erase(1);
  CHECK(cache.allocate(4096, stream_a) == block);
  CHECK(cache.stats().waiting_blocks == 0);
  CHECK(driver.destroyed_events == 2);
  // The home stream itself needs no event.
  void* own = cache.allocate(100, stream_a);
  cache.free(own, {stream_a});
  CHECK(driver.recorded_on.size() == 2);
}

TEST_CASE("block cache: split blocks merge back and an emptied cache frees whole segments",
          "[core][allocator]") {
  FakeDriver driver;
  BlockCache cache(driver);
  void* a = cache.allocate(512, stream_a);
  void* b = cache.allocate(512, stream_a);
  void* c = cache.allocate(512, stream_a);
  CHECK(at(b) == at(a) + 512);
  CHECK(at(c) == at(b) + 512);
  void* large = cache.allocate(12 * MiB, stream_a);  // a 12 MiB segment, not split
  CHECK(driver.segments == 2);
  cache.free(b, {});
  cache.empty_cache(false);
  CHECK(driver.segment_frees == 0);  // both segments still hold live blocks
  cache.free(a, {});
  cache.free(c, {});
  // a, b, c and the segment's rest are one free block again: a 2 MiB request fits.
  CHECK(cache.allocate(2 * MiB, stream_a) != nullptr);
  CHECK(driver.segments == 3);  // 2 MiB is a large request: its own pool and segment
  cache.free(large, {});
  cache.empty_cache(false);
  CHECK(driver.segment_frees == 2);  // the small segment and the 12 MiB one
  CHECK(cache.stats().reserved_bytes == int64_t(20 * MiB));
  CHECK(cache.stats().segment_frees == 2);
}

TEST_CASE("block cache: a large block's rest is kept only above 1 MiB", "[core][allocator]") {
  FakeDriver driver;
  BlockCache cache(driver);
  void* big = cache.allocate(19 * MiB, stream_a);  // a 20 MiB segment; 1 MiB left, unsplit
  CHECK(cache.stats().cached_bytes == 0);
  void* next = cache.allocate(2 * MiB, stream_a);
  CHECK(driver.segments == 2);
  cache.free(big, {});
  cache.free(next, {});
  void* medium = cache.allocate(4 * MiB, stream_a);  // splits a 20 MiB block: 16 MiB rest
  void* rest = cache.allocate(16 * MiB, stream_a);
  CHECK(driver.segments == 2);
  CHECK(at(rest) == at(medium) + 4 * MiB);
}

TEST_CASE("block cache: out of memory frees the cached segments and retries", "[core][allocator]") {
  FakeDriver driver;
  driver.capacity = 40 * MiB;
  BlockCache cache(driver);
  void* first = cache.allocate(12 * MiB, stream_a);
  void* second = cache.allocate(12 * MiB, stream_a);
  cache.free(first, {});
  cache.free(second, {});
  // 24 MiB cached; 30 MiB more does not fit beside them: the cache gives them back.
  void* big = cache.allocate(30 * MiB, stream_a);
  CHECK(big != nullptr);
  CHECK(driver.refused == 1);
  CHECK(driver.segment_frees == 2);
  // A block waiting for an event is not given back; the driver's last try then throws.
  void* used = cache.allocate(512, stream_b);  // a 2 MiB segment
  cache.free(big, {});
  cache.free(used, {stream_c});
  // 40 MiB asked: the cached 30 MiB go, the waiting block's 2 MiB stay, and it cannot fit.
  CHECK_THROWS_WITH(cache.allocate(39 * MiB, stream_a), "out of memory");
  CHECK(driver.segment_frees == 3);
  CHECK(driver.in_use == 2 * MiB);
}

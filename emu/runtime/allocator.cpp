#include "emu/runtime/allocator.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <string>
#include <vector>

#include "emu/runtime/device_table.h"
#include "emu/runtime/profile.h"

namespace sonata::emu {

namespace {

// How far back a free list is searched, and how much bigger than asked a reused block may
// be (beyond that, carving a new block wastes less).
constexpr size_t kSearchDepth = 4096;
constexpr size_t kLargeBlock = size_t{1} << 20;

struct Pool {
  uint64_t release_threshold = 0;
  uint64_t used = 0;  // live pooled bytes
  uint64_t used_high = 0;
  uint64_t held = 0;  // freed pooled bytes the pool keeps
  uint64_t reserved_high = 0;
  // What a card's pool reserves, for the emulated profile's driver calls: the pooled bytes
  // live in stream order (a cudaFreeAsync counts once enqueued: an allocation ordered
  // after it may reuse its memory, while here the free waits for the lazy scheduler), and
  // the most of them the pool has held since its last trim. The driver is called when that
  // reservation grows.
  uint64_t ordered_live = 0;
  uint64_t modelled_reserve = 0;
  int reuse_flags[3] = {1, 1, 1};
  std::deque<Block*> free_blocks;  // most recently freed at the back
};

struct DeviceMemory {
  Pool pool;
  std::deque<Block*> free_blocks;  // freed by cudaFree, or returned by the pool
  size_t in_use = 0;
};

std::vector<DeviceMemory>& memories() {
  static auto* table = new std::vector<DeviceMemory>(static_cast<size_t>(device_count()));
  return *table;
}

std::deque<Block*>& pinned_free() {
  static auto* list = new std::deque<Block*>;
  return *list;
}

// Pool handles are addresses of these markers, one per device.
std::vector<char>& pool_handles() {
  static auto* handles = new std::vector<char>(static_cast<size_t>(device_count()));
  return *handles;
}

size_t round_capacity(size_t size) {
  return std::max(kAlignment, (size + kAlignment - 1) / kAlignment * kAlignment);
}

Block* take_recent(std::deque<Block*>& list, size_t capacity) {
  size_t searched = 0;
  for (auto it = list.rbegin(); it != list.rend() && searched < kSearchDepth; ++it, ++searched) {
    Block* block = *it;
    if (block->capacity >= capacity && block->capacity <= 2 * capacity + kLargeBlock) {
      list.erase(std::next(it).base());
      return block;
    }
  }
  return nullptr;
}

void hand_out(Block& block, int device, size_t size, bool pooled) {
  block.size = size;
  block.device = device;
  block.live = true;
  block.free_pending = false;
  block.pooled = pooled;
  block.suballocated = false;
  block.regions.clear();
  block.freed_regions.clear();
  if (block.kind == BlockKind::device) {
    // Small blocks are poisoned, as a card's recycled memory holds old values; large ones
    // start mostly as zero pages (release_block gave their whole pages back), since
    // poisoning would commit the whole block: a test that fills an 80 GiB device must fit
    // in this machine's RAM. initcheck catches a read of either before it is written.
    if (block.capacity < kLargeBlock)
      std::memset(reinterpret_cast<void*>(block.base), 0xFF, block.capacity);
    block.initialised.clear_all();
  }
}

void note_highs(Pool& pool) {
  pool.used_high = std::max(pool.used_high, pool.used);
  pool.reserved_high = std::max(pool.reserved_high, pool.used + pool.held);
}

// Freed large blocks give their pages back (they read as zero until reused), so a long run
// does not keep every block it ever freed in RAM: only the pages wholly inside the block,
// since blocks are 256-byte aligned and a page shared with a neighbour holds its live data.
void drop_pages(Block& block) {
  if (block.capacity < kLargeBlock) return;
  constexpr uintptr_t kPage = 4096;
  const uintptr_t first = (block.base + kPage - 1) & ~(kPage - 1);
  const uintptr_t last = (block.base + block.capacity) & ~(kPage - 1);
  if (last > first) madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
}

// The pool's oldest cached block back to the driver (the most recent stay for reuse);
// false when the pool caches nothing.
bool give_back_oldest(DeviceMemory& memory) {
  Pool& pool = memory.pool;
  if (pool.free_blocks.empty()) return false;
  Block* block = pool.free_blocks.front();
  pool.free_blocks.pop_front();
  pool.held -= block->capacity;
  memory.in_use -= block->capacity;
  block->pooled = false;
  memory.free_blocks.push_back(block);
  return true;
}

// SONATA_EMU_QUARANTINE=1: freed device blocks are never reused (AddressSanitizer's
// quarantine, without its bound), for hunting a stale pointer whose block the adversarial
// reuse would otherwise hand to a new owner, hiding the access behind a live allocation.
bool quarantine() {
  static const bool on = [] {
    const char* text = std::getenv("SONATA_EMU_QUARANTINE");
    return text && std::string(text) == "1";
  }();
  return on;
}

int64_t allocations = 0;  // under the ExecLock, as every call here

}  // namespace

int64_t device_allocations() {
  return allocations;
}

Block* allocate_device(int device, size_t size, bool pooled) {
  DeviceMemory& memory = memories().at(static_cast<size_t>(device));
  const size_t capacity = round_capacity(size);
  Block* block = nullptr;
  if (pooled) {
    block = take_recent(memory.pool.free_blocks, capacity);
    if (block) memory.pool.held -= block->capacity;  // the pool's already: in_use unchanged
  }
  if (!block) {
    // From the driver: what the pool keeps cached is not free to anyone else, as on a card.
    // The pool itself may re-map its own cached memory for an allocation of another size.
    const size_t total = device_properties(device).totalGlobalMem;
    if (pooled) {
      while (memory.in_use + capacity > total && give_back_oldest(memory)) {
      }
    }
    if (memory.in_use + capacity > total) return nullptr;
    block = take_recent(memory.free_blocks, capacity);
    if (!block) block = carve_block(BlockKind::device, capacity);
    if (!block) return nullptr;
    memory.in_use += block->capacity;
    if (!pooled) profile::driver_alloc("cudaMalloc", block->capacity, device);
  }
  hand_out(*block, device, size, pooled);
  ++allocations;
  if (pooled) {
    Pool& pool = memory.pool;
    pool.used += block->capacity;
    note_highs(pool);
    pool.ordered_live += block->capacity;
    if (pool.ordered_live > pool.modelled_reserve) {
      profile::driver_alloc("cudaMallocAsync (the pool grew)",
                            pool.ordered_live - pool.modelled_reserve, device);
      pool.modelled_reserve = pool.ordered_live;
    }
  }
  return block;
}

Block* live_block_at(const void* pointer) {
  Block* block = block_at(pointer);
  return block && block->live ? block : nullptr;
}

void release_block(Block& block) {
  block.live = false;
  block.free_pending = false;
  if (block.kind == BlockKind::pinned) {
    pinned_free().push_back(&block);
    return;
  }
  DeviceMemory& memory = memories().at(static_cast<size_t>(block.device));
  drop_pages(block);
  if (quarantine()) {  // never handed out again: a later access through a stale pointer is
                       // an access to freed memory, reported with its kernel
    if (block.pooled) memory.pool.used -= block.capacity;
    memory.in_use -= block.capacity;
    return;
  }
  if (block.pooled) {  // the pool keeps it reserved: the driver still counts it in use
    memory.pool.used -= block.capacity;
    memory.pool.held += block.capacity;
    memory.pool.free_blocks.push_back(&block);
  } else {
    memory.in_use -= block.capacity;
    memory.free_blocks.push_back(&block);
    profile::driver_free("cudaFree", block.capacity, block.device);
  }
}

Block* allocate_pinned(size_t size) {
  const size_t capacity = round_capacity(size);
  Block* block = take_recent(pinned_free(), capacity);
  if (!block) block = carve_block(BlockKind::pinned, capacity);
  if (!block) return nullptr;
  profile::driver_alloc("cudaHostAlloc", block->capacity, -1);
  hand_out(*block, -1, size, false);
  return block;
}

cudaMemPool_t default_pool(int device) {
  return reinterpret_cast<cudaMemPool_t>(&pool_handles().at(static_cast<size_t>(device)));
}

int pool_device(cudaMemPool_t pool) {
  const auto& handles = pool_handles();
  const char* at = reinterpret_cast<const char*>(pool);
  if (handles.empty() || at < handles.data() || at >= handles.data() + handles.size()) return -1;
  return static_cast<int>(at - handles.data());
}

bool set_pool_attribute(int device, cudaMemPoolAttr attr, const void* value) {
  Pool& pool = memories().at(static_cast<size_t>(device)).pool;
  switch (attr) {
    case cudaMemPoolReuseFollowEventDependencies:
    case cudaMemPoolReuseAllowOpportunistic:
    case cudaMemPoolReuseAllowInternalDependencies:
      pool.reuse_flags[attr - 1] = *static_cast<const int*>(value);
      return true;
    case cudaMemPoolAttrReleaseThreshold:
      pool.release_threshold = *static_cast<const uint64_t*>(value);
      return true;
    case cudaMemPoolAttrReservedMemHigh:  // only a reset to 0 is allowed
      if (*static_cast<const uint64_t*>(value) != 0) return false;
      pool.reserved_high = pool.used + pool.held;
      return true;
    case cudaMemPoolAttrUsedMemHigh:
      if (*static_cast<const uint64_t*>(value) != 0) return false;
      pool.used_high = pool.used;
      return true;
    default:
      return false;
  }
}

bool get_pool_attribute(int device, cudaMemPoolAttr attr, void* value) {
  const Pool& pool = memories().at(static_cast<size_t>(device)).pool;
  auto put = [value](uint64_t v) { *static_cast<uint64_t*>(value) = v; };
  switch (attr) {
    case cudaMemPoolReuseFollowEventDependencies:
    case cudaMemPoolReuseAllowOpportunistic:
    case cudaMemPoolReuseAllowInternalDependencies:
      *static_cast<int*>(value) = pool.reuse_flags[attr - 1];
      return true;
    case cudaMemPoolAttrReleaseThreshold:
      put(pool.release_threshold);
      return true;
    case cudaMemPoolAttrReservedMemCurrent:
      put(pool.used + pool.held);
      return true;
    case cudaMemPoolAttrReservedMemHigh:
      put(pool.reserved_high);
      return true;
    case cudaMemPoolAttrUsedMemCurrent:
      put(pool.used);
      return true;
    case cudaMemPoolAttrUsedMemHigh:
      put(pool.used_high);
      return true;
    default:
      return false;
  }
}

void trim_pool(int device, size_t keep) {
  DeviceMemory& memory = memories().at(static_cast<size_t>(device));
  Pool& pool = memory.pool;
  const uint64_t target = std::max<uint64_t>(keep, pool.used);
  while (pool.used + pool.held > target && give_back_oldest(memory)) {
  }
  const uint64_t kept = std::max<uint64_t>(target, pool.ordered_live);
  if (pool.modelled_reserve > kept) {
    profile::driver_free("the pool's trim", pool.modelled_reserve - kept, device);
    pool.modelled_reserve = kept;
  }
}

void note_pool_free_enqueued(const Block& block) {
  if (!block.pooled || block.device < 0) return;
  Pool& pool = memories().at(static_cast<size_t>(block.device)).pool;
  pool.ordered_live -= std::min<uint64_t>(pool.ordered_live, block.capacity);
}

void trim_pools_to_threshold() {
  for (int device = 0; device < device_count(); ++device) {
    const Pool& pool = memories()[static_cast<size_t>(device)].pool;
    if (pool.used + pool.held > pool.release_threshold) {
      trim_pool(device, pool.release_threshold);
    }
  }
}

size_t device_bytes_in_use(int device) {
  return memories().at(static_cast<size_t>(device)).in_use;
}

}  // namespace sonata::emu

#include "emu/runtime/memory_arena.h"

#include "emu/runtime/memory_map.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <sstream>

namespace sonata::emu {

namespace {

// Address space only: nothing is committed until a block is carved.
constexpr size_t kDevicePart = size_t{512} << 30;
constexpr size_t kPinnedPart = size_t{64} << 30;

struct Arena {
  uintptr_t device_begin = 0;
  uintptr_t pinned_begin = 0;
  uintptr_t device_next = 0;
  uintptr_t pinned_next = 0;
  std::map<uintptr_t, std::unique_ptr<Block>> blocks;  // by base
};

Arena& arena() {
  static Arena* instance = [] {
    void* range = mmap(nullptr, kDevicePart + kPinnedPart, PROT_NONE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (range == MAP_FAILED) {
      std::fprintf(stderr,
                   "sonata emu: cannot reserve %zu GiB of address space for the "
                   "emulated devices' memory\n",
                   (kDevicePart + kPinnedPart) >> 30);
      std::abort();
    }
    auto* a = new Arena;
    a->device_begin = reinterpret_cast<uintptr_t>(range);
    a->pinned_begin = a->device_begin + kDevicePart;
    a->device_next = a->device_begin;
    a->pinned_next = a->pinned_begin;
    return a;
  }();
  return *instance;
}

constexpr uintptr_t kPage = 4096;

bool commit(uintptr_t begin, uintptr_t end) {
  const uintptr_t first = begin & ~(kPage - 1);
  const uintptr_t last = (end + kPage - 1) & ~(kPage - 1);
  return mprotect(reinterpret_cast<void*>(first), last - first, PROT_READ | PROT_WRITE) == 0;
}

}  // namespace

Block* carve_block(BlockKind kind, size_t capacity) {
  Arena& a = arena();
  uintptr_t& next = kind == BlockKind::device ? a.device_next : a.pinned_next;
  const uintptr_t limit = kind == BlockKind::device ? a.pinned_begin : a.pinned_begin + kPinnedPart;
  const uintptr_t base = next + kRedZone;
  if (capacity > limit - base) return nullptr;
  if (!commit(base, base + capacity)) return nullptr;
  next = base + capacity;
  auto block = std::make_unique<Block>();
  block->base = base;
  block->capacity = capacity;
  block->kind = kind;
  if (kind == BlockKind::device) block->initialised.allocate(capacity);
  Block* raw = block.get();
  a.blocks.emplace(base, std::move(block));
  return raw;
}

Block* find_block(const void* address) {
  Arena& a = arena();
  const auto at = reinterpret_cast<uintptr_t>(address);
  // Kernels touch one allocation many times in a row; blocks are never destroyed, so the
  // last block found stays a valid guess (callers hold the ExecLock).
  static Block* last = nullptr;
  if (last && at >= last->base && at < last->base + last->capacity) return last;
  auto it = a.blocks.upper_bound(at);
  if (it == a.blocks.begin()) return nullptr;
  --it;
  Block* block = it->second.get();
  if (at >= block->base + block->capacity) return nullptr;
  last = block;
  return block;
}

Block* block_at(const void* address) {
  Arena& a = arena();
  auto it = a.blocks.find(reinterpret_cast<uintptr_t>(address));
  return it == a.blocks.end() ? nullptr : it->second.get();
}

bool in_device_arena(const void* address) {
  const Arena& a = arena();
  const auto at = reinterpret_cast<uintptr_t>(address);
  return at >= a.device_begin && at < a.pinned_begin;
}

bool in_pinned_arena(const void* address) {
  const Arena& a = arena();
  const auto at = reinterpret_cast<uintptr_t>(address);
  return at >= a.pinned_begin && at < a.pinned_begin + kPinnedPart;
}

namespace {

void set_bits(Block& block, size_t offset, size_t end, bool value) {
  size_t bit = offset;
  while (bit < end) {
    uint64_t& word = block.initialised.word(bit / 64);
    const size_t low = bit % 64;
    const size_t count = std::min<size_t>(64 - low, end - bit);
    const uint64_t mask = count == 64 ? ~uint64_t{0} : ((uint64_t{1} << count) - 1) << low;
    // Written only when it changes: an untouched shadow page stays uncommitted.
    const uint64_t updated = value ? (word | mask) : (word & ~mask);
    if (updated != word) word = updated;
    bit += count;
  }
}

}  // namespace

void set_initialised(Block& block, size_t offset, size_t bytes, bool value) {
  if (block.initialised.empty()) return;
  const size_t end = offset + bytes;
  const size_t first_word = (offset + 63) / 64, end_word = end / 64;
  if (!value && end_word > first_word) {
    // A large region handed out again (a caching allocator's) clears its shadow's whole
    // pages without touching them.
    set_bits(block, offset, first_word * 64, false);
    block.initialised.clear_words(first_word, end_word);
    set_bits(block, end_word * 64, end, false);
    return;
  }
  set_bits(block, offset, end, value);
}

bool all_initialised(const Block& block, size_t offset, size_t bytes) {
  if (block.initialised.empty()) return true;
  size_t bit = offset;
  const size_t end = offset + bytes;
  while (bit < end) {
    const uint64_t word = block.initialised.word(bit / 64);
    const size_t low = bit % 64;
    const size_t count = std::min<size_t>(64 - low, end - bit);
    const uint64_t mask = count == 64 ? ~uint64_t{0} : ((uint64_t{1} << count) - 1) << low;
    if ((word & mask) != mask) return false;
    bit += count;
  }
  return true;
}

void copy_initialised(Block& dst, size_t dst_offset, const Block& src, size_t src_offset,
                      size_t bytes) {
  if (dst.initialised.empty()) return;
  if (src.initialised.empty()) {
    set_initialised(dst, dst_offset, bytes, true);
    return;
  }
  // Bit by bit is slow but copies of partly initialised buffers are rare; the common cases
  // (all set, none set) are one range operation.
  if (all_initialised(src, src_offset, bytes)) {
    set_initialised(dst, dst_offset, bytes, true);
    return;
  }
  for (size_t i = 0; i < bytes; ++i) {
    set_initialised(dst, dst_offset + i, 1, all_initialised(src, src_offset + i, 1));
  }
}

std::string describe(const Block& block) {
  std::ostringstream text;
  if (block.kind == BlockKind::pinned) {
    text << "pinned host allocation 0x" << std::hex << block.base << std::dec << " of "
         << block.size << " bytes";
  } else {
    text << "allocation 0x" << std::hex << block.base << std::dec << " of " << block.size
         << " bytes on device " << block.device;
  }
  return text.str();
}

}  // namespace sonata::emu

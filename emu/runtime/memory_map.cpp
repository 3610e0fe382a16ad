// check_access: the memory map's verdict on one access (memory_map.h), from the arena's
// blocks and their initialisation shadows.
#include "emu/runtime/memory_map.h"

#include <map>
#include <sstream>

#include "emu/runtime/exec_lock.h"
#include "emu/runtime/memory_arena.h"

namespace sonata::emu {

namespace {

std::string access_text(uintptr_t at, size_t bytes, AccessKind kind) {
  std::ostringstream text;
  text << (kind == AccessKind::read ? "read" : "write") << " of " << bytes << " bytes at 0x"
       << std::hex << at << std::dec;
  return text.str();
}

// For an address in no block: which allocation it is nearest to, as compute-sanitizer says
// "N bytes after the nearest allocation".
std::string nearest_text(uintptr_t at) {
  Block* before = nullptr;
  for (uintptr_t probe = at; probe >= at - 4 * kAlignment && probe > kAlignment; probe -= 64) {
    if ((before = find_block(reinterpret_cast<const void*>(probe)))) break;
  }
  if (!before) return "in no allocation";
  std::ostringstream text;
  text << (at - before->base - before->size) << " bytes past the end of " << describe(*before);
  return text.str();
}

// A sub-allocated block's region that holds `offset` (emu/include/sonata_emu_regions.h), as
// its [begin, end); false when the offset is in none (bytes the sub-allocator holds free).
bool region_at(const std::map<size_t, size_t>& regions, size_t offset, size_t& begin, size_t& end) {
  auto it = regions.upper_bound(offset);
  if (it == regions.begin()) return false;
  --it;
  if (offset >= it->first + it->second) return false;
  begin = it->first;
  end = it->first + it->second;
  return true;
}

}  // namespace

AccessCheck check_access(const void* address, size_t bytes, AccessKind kind) {
  ExecLock lock;
  const auto at = reinterpret_cast<uintptr_t>(address);
  const bool device = in_device_arena(address);
  if (!device && !in_pinned_arena(address)) return {AccessVerdict::outside_device_memory, {}};
  AccessCheck check;
  Block* block = find_block(address);
  if (!block) {
    check.verdict = AccessVerdict::out_of_bounds;  // a red zone, or carved-off space
    check.detail = access_text(at, bytes, kind) + ": " + nearest_text(at);
    return check;
  }
  const size_t offset = at - block->base;
  if (!block->live) {
    check.verdict = AccessVerdict::freed;
    check.detail = access_text(at, bytes, kind) + ": offset " + std::to_string(offset) +
                   " in freed " + describe(*block);
    return check;
  }
  if (block->suballocated) {
    size_t begin = 0, end = 0;
    if (!region_at(block->regions, offset, begin, end)) {
      const bool freed = region_at(block->freed_regions, offset, begin, end);
      check.verdict = freed ? AccessVerdict::freed : AccessVerdict::out_of_bounds;
      check.detail = access_text(at, bytes, kind) + ": offset " + std::to_string(offset) + " of " +
                     describe(*block) + " is in none of its live sub-allocations" +
                     (freed ? " (a region freed into a caching allocator)"
                            : " (past a region's end, or never handed out)");
      return check;
    }
    if (offset + bytes > end) {
      check.verdict = AccessVerdict::out_of_bounds;
      check.detail = access_text(at, bytes, kind) + ": runs past the end of the " +
                     std::to_string(end - begin) + "-byte sub-allocation at offset " +
                     std::to_string(begin) + " of " + describe(*block);
      return check;
    }
  }
  if (offset + bytes > block->size) {
    check.verdict = AccessVerdict::out_of_bounds;
    check.detail = access_text(at, bytes, kind) + ": offset " + std::to_string(offset) +
                   " runs past the end of " + describe(*block);
    return check;
  }
  if (kind == AccessKind::write) {
    set_initialised(*block, offset, bytes, true);
  } else if (!all_initialised(*block, offset, bytes)) {
    check.verdict = AccessVerdict::uninitialised;
    check.detail = access_text(at, bytes, kind) + ": offset " + std::to_string(offset) + " of " +
                   describe(*block) + " was never written";
  }
  return check;
}

bool readable(const void* address, size_t bytes) {
  ExecLock lock;
  const auto at = reinterpret_cast<uintptr_t>(address);
  const Block* block = find_block(address);
  if (!block || !block->live) return false;
  const size_t offset = at - block->base;
  if (block->suballocated) {
    size_t begin = 0, end = 0;
    if (!region_at(block->regions, offset, begin, end) || offset + bytes > end) return false;
  }
  return offset + bytes <= block->size && all_initialised(*block, offset, bytes);
}

}  // namespace sonata::emu

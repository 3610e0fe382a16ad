#pragma once
// Where emulated memory lives: one reserved address range (mmap PROT_NONE, MAP_NORESERVE,
// committed block by block) split into a device part, where every device's cudaMalloc'd
// memory lives (so in_device_arena is a range compare), and a pinned part for cudaHostAlloc.
// Blocks are 256-byte aligned with a red zone before each; a block, once carved, keeps its
// base and capacity for the life of the process and is reused through the allocator's free
// lists, so a freed block stays recorded as freed until it is handed out again.
// Callers hold the ExecLock.
#include "emu/runtime/shadow_bits.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

namespace sonata::emu {

enum class BlockKind { device, pinned };

struct Block {
  uintptr_t base = 0;
  size_t capacity = 0;  // bytes the block owns (a multiple of 256)
  size_t size = 0;      // bytes the current (or last) allocation asked for
  int device = -1;      // -1 for pinned host memory
  BlockKind kind = BlockKind::device;
  bool live = false;
  bool free_pending = false;  // cudaFreeAsync enqueued, not yet run in stream order
  bool pooled = false;        // allocated by cudaMallocAsync (the device's memory pool)
  ShadowBits initialised;     // one bit per byte of capacity (device blocks)
  // A sub-allocator's regions (emu/include/sonata_emu_regions.h): once `suballocated`, an
  // access must lie in one of them, by offset -> bytes. Cleared when the block is reused.
  // `freed_regions`: bytes of regions freed and not handed out again (an access there is to
  // freed memory; elsewhere outside a region, out of bounds).
  bool suballocated = false;
  std::map<size_t, size_t> regions, freed_regions;
};

constexpr size_t kAlignment = 256;
constexpr size_t kRedZone = 256;

// A new block of `capacity` bytes (a multiple of kAlignment), committed and registered;
// nullptr when its part of the arena is exhausted.
Block* carve_block(BlockKind kind, size_t capacity);

// The block whose [base, base + capacity) holds `address`, or nullptr.
Block* find_block(const void* address);

// The block that starts at `address`, or nullptr.
Block* block_at(const void* address);

bool in_pinned_arena(const void* address);

// Initialisation shadow (initcheck): bytes [offset, offset + bytes) of `block`.
void set_initialised(Block& block, size_t offset, size_t bytes, bool value);
bool all_initialised(const Block& block, size_t offset, size_t bytes);
// Copies the shadow of a device-to-device copy: the destination is as initialised as the
// source was.
void copy_initialised(Block& dst, size_t dst_offset, const Block& src, size_t src_offset,
                      size_t bytes);

// "allocation 0x... of N bytes on device D" (or "pinned host allocation ...").
std::string describe(const Block& block);

}  // namespace sonata::emu

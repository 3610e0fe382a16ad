// The sub-allocator regions (emu/include/sonata_emu_regions.h): each call checks its
// pointer at once and changes the memory map in stream order, as a piece of work.
#include <cstring>
#include <sstream>

#include "cuda_runtime_api.h"
#include "emu/runtime/allocator.h"
#include "emu/runtime/api_guard.h"
#include "emu/runtime/memory_arena.h"
#include "sonata_emu_regions.h"

using namespace sonata::emu;

namespace {

// Below this a new region is poisoned, as allocator.cpp poisons a small block it hands out
// (larger ones would commit their pages for nothing: initcheck catches the read anyway).
constexpr size_t kPoisonLimit = size_t{1} << 20;

// The live device allocation that holds [data, data + bytes), or nullptr.
Block* segment_of(const void* data, size_t bytes) {
  Block* block = find_block(data);
  if (!block || !block->live || block->kind != BlockKind::device) return nullptr;
  const size_t offset = reinterpret_cast<uintptr_t>(data) - block->base;
  return offset + bytes <= block->size ? block : nullptr;
}

// Removes [offset, offset + bytes) from the block's freed regions (a new owner's now).
void unfree(Block& block, size_t offset, size_t bytes) {
  const size_t end = offset + bytes;
  auto it = block.freed_regions.upper_bound(offset);
  if (it != block.freed_regions.begin()) --it;
  while (it != block.freed_regions.end() && it->first < end) {
    const size_t begin = it->first, stop = it->first + it->second;
    if (stop <= offset) {
      ++it;
      continue;
    }
    it = block.freed_regions.erase(it);
    if (begin < offset) block.freed_regions[begin] = offset - begin;
    if (stop > end) block.freed_regions[end] = stop - end;
  }
}

std::string region_text(const void* data, size_t bytes) {
  std::ostringstream text;
  text << "region " << data << " of " << bytes << " bytes";
  return text.str();
}

}  // namespace

extern "C" {

cudaError_t sonataEmuRegionAllocated(void* data, size_t bytes, cudaStream_t hStream) {
  return api_call("sonataEmuRegionAllocated", [&] {
    StreamState* stream = resolve_stream(hStream);
    if (!stream) return cudaErrorInvalidResourceHandle;
    Block* block = segment_of(data, bytes);
    if (!block || bytes == 0) {
      return refuse("sonataEmuRegionAllocated", cudaErrorInvalidValue,
                    region_text(data, bytes) + " is not inside a live device allocation");
    }
    block->suballocated = true;  // from now on: before the region's work runs, it is freed
    const size_t offset = reinterpret_cast<uintptr_t>(data) - block->base;
    Work work;
    work.name = "sonataEmuRegionAllocated(" + region_text(data, bytes) + ")";
    work.run = [block, offset, bytes] {
      block->regions[offset] = bytes;
      unfree(*block, offset, bytes);
      set_initialised(*block, offset, bytes, false);
      if (bytes < kPoisonLimit)
        std::memset(reinterpret_cast<void*>(block->base + offset), 0xFF, bytes);
    };
    enqueue_node(stream, std::move(work));
    return cudaSuccess;
  });
}

cudaError_t sonataEmuRegionFreed(void* data, cudaStream_t hStream) {
  return api_call("sonataEmuRegionFreed", [&] {
    StreamState* stream = resolve_stream(hStream);
    if (!stream) return cudaErrorInvalidResourceHandle;
    Block* block = segment_of(data, 1);
    if (!block || !block->suballocated) {
      return refuse("sonataEmuRegionFreed", cudaErrorInvalidValue,
                    region_text(data, 0) + " is not in a sub-allocated device allocation");
    }
    const size_t offset = reinterpret_cast<uintptr_t>(data) - block->base;
    Work work;
    work.name = "sonataEmuRegionFreed(" + region_text(data, 0) + ")";
    work.run = [block, offset] {
      const auto region = block->regions.find(offset);
      if (region == block->regions.end()) return;  // the segment was reused since
      set_initialised(*block, offset, region->second, false);
      block->freed_regions[offset] = region->second;
      block->regions.erase(region);
    };
    enqueue_node(stream, std::move(work));
    return cudaSuccess;
  });
}

int64_t sonataEmuDeviceAllocations(void) {
  sonata::emu::ExecLock lock;
  return device_allocations();
}

}  // extern "C"

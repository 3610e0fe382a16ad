#pragma once
// The emulated devices' allocators: cudaMalloc's, each device's stream-ordered memory pool
// (cudaMallocAsync / cudaFreeAsync, with the pool's attributes), and pinned host memory.
// Adversarial reuse: a request gets the most recently freed block that fits, so a use
// after free, or a free while another stream still reads, meets somebody else's data.
// New memory is marked never written; small blocks are filled with 0xFF bytes (NaN as
// float), large ones start mostly as zero pages.
// Callers hold the ExecLock.
#include <cstddef>
#include <cstdint>

#include "driver_types.h"
#include "emu/runtime/memory_arena.h"

namespace sonata::emu {

// A live device block of `size` bytes on `device`; nullptr when out of memory.
// `pooled`: from the device's memory pool (cudaMallocAsync).
Block* allocate_device(int device, size_t size, bool pooled);

// Blocks allocate_device has returned since the process started (sonataEmuDeviceAllocations).
int64_t device_allocations();

// The live allocation that starts at `pointer` (what cudaFree may be given), or nullptr.
Block* live_block_at(const void* pointer);

// Ends a block's allocation: it reads as freed until handed out again.
void release_block(Block& block);

Block* allocate_pinned(size_t size);

// The memory pool of `device` (cudaDeviceGetDefaultMemPool), and the device a pool handle
// names (-1 for an unknown handle).
cudaMemPool_t default_pool(int device);
int pool_device(cudaMemPool_t pool);

// cudaMemPoolSetAttribute / GetAttribute; false for an attribute or value the pool refuses.
bool set_pool_attribute(int device, cudaMemPoolAttr attr, const void* value);
bool get_pool_attribute(int device, cudaMemPoolAttr attr, void* value);

// A cudaFreeAsync of `block` was enqueued: in stream order its memory is the pool's again
// (the emulated profile's model of when a card's pool must grow).
void note_pool_free_enqueued(const Block& block);

// Returns pooled free memory to the device until the pool holds at most
// max(keep, used) bytes (cudaMemPoolTrimTo); at a synchronisation the pool trims to its
// release threshold, as the real pool does.
void trim_pool(int device, size_t keep);
void trim_pools_to_threshold();

// Bytes of live allocations on `device` (cudaMemGetInfo).
size_t device_bytes_in_use(int device);

}  // namespace sonata::emu

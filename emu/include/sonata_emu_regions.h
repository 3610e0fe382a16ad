#pragma once
// The emulator's own entry points for a sub-allocator (no CUDA call does this; on a card
// compute-sanitizer learns the same through NVTX's memory API): a caching allocator carves
// tensors out of segments it got from cudaMallocAsync, and hands a freed tensor's block to
// the next tensor without a driver call, so the memory checks would see one live allocation
// where there are many tensors and freed ones. Once a region call names a device
// allocation, an access to it must lie inside one live region: an access to a region's
// freed bytes is reported as an access to freed memory, one past a region's end as out of
// bounds, a read of bytes its current owner never wrote as uninitialised (initcheck). Both
// calls take effect in `stream`'s order, as a free and the next owner's first use do.
#include <cstddef>
#include <cstdint>

#include "driver_types.h"

extern "C" {

// Bytes [data, data + bytes) of a live device allocation now belong to a new owner: never
// written (and, below 1 MiB, filled with 0xFF bytes, as recycled memory holds old values).
cudaError_t sonataEmuRegionAllocated(void* data, size_t bytes, cudaStream_t stream);
// The region that starts at `data` was freed into the sub-allocator's cache.
cudaError_t sonataEmuRegionFreed(void* data, cudaStream_t stream);
// cudaMalloc and cudaMallocAsync calls that returned memory, since the process started: a
// test's count of driver allocations.
int64_t sonataEmuDeviceAllocations(void);
}

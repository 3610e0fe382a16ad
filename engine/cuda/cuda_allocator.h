#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>

#include "engine/stream_uses.h"

namespace sonata {

// A block from cudaMallocAsync, freed on the stream it was allocated on (its home stream).
// Memory used on another stream is recorded in its StreamUses (Storage::record_stream), and
// the free waits for that work.
struct CudaBlock {
  void* data = nullptr;
  size_t nbytes = 0;
  int device = 0;
  cudaStream_t stream = nullptr;
};

CudaBlock cuda_allocate(size_t nbytes, int device);
// Never throws (it runs in deleters); a failure is reported on stderr (release_succeeded).
// `uses` has the block's stream as its home.
void cuda_free(const CudaBlock& block, StreamUses& uses);

}  // namespace sonata

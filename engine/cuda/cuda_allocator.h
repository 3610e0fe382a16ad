#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>

namespace sonata {

// A block from cudaMallocAsync, freed on the stream it was allocated on. Memory used on
// another stream must be ordered back to that stream (an event) before it is released.
struct CudaBlock {
  void* data = nullptr;
  size_t nbytes = 0;
  int device = 0;
  cudaStream_t stream = nullptr;
};

CudaBlock cuda_allocate(size_t nbytes, int device);
void cuda_free(const CudaBlock& block);

}  // namespace sonata

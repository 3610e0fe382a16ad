#pragma once
// Scratch device memory for the kernels of one call, stream-ordered: cudaMallocAsync from
// the device's pool on the call's stream, and cudaFreeAsync on the same stream when the
// owner goes out of scope, so the free is ordered after every kernel the call enqueued on
// it and the memory returns to the pool only once they are done. Freeing in the destructor
// means a launch check that throws between the allocation and the last kernel does not leak
// it. A failed free is reported through CUDA_RELEASE (base/cuda_status.h), never thrown:
// the destructor may run during unwinding.
#include <cuda_runtime_api.h>

#include <cstddef>

namespace sonata::kernels::cuda {

class StreamScratch {
 public:
  StreamScratch() = default;  // holds nothing
  // Throws (CUDA_CHECK) when the allocation fails. Zero bytes hold nothing (data() null).
  StreamScratch(size_t bytes, cudaStream_t stream);
  // For callers that can go on without the memory (cudnnFind's timing buffers): empty on
  // failure, the failed allocation's status cleared so that no later launch check sees it.
  static StreamScratch try_allocate(size_t bytes, cudaStream_t stream);

  StreamScratch(StreamScratch&& other) noexcept;
  StreamScratch& operator=(StreamScratch&& other) noexcept;
  StreamScratch(const StreamScratch&) = delete;
  StreamScratch& operator=(const StreamScratch&) = delete;
  ~StreamScratch();

  void* data() const { return data_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(data_);
  }
  bool empty() const { return data_ == nullptr; }

 private:
  void release() noexcept;

  void* data_ = nullptr;
  cudaStream_t stream_ = nullptr;
};

}  // namespace sonata::kernels::cuda

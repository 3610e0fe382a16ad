#include "kernels/cuda/stream_scratch.h"

#include <utility>

#include "base/cuda_check.h"
#include "base/cuda_status.h"
#include "kernels/cuda/device_pool.h"

namespace sonata::kernels::cuda {

StreamScratch::StreamScratch(size_t bytes, cudaStream_t stream) : stream_(stream) {
  if (bytes == 0) return;
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  allocate_retrying("kernel scratch memory", bytes, device,
                    [&] { return cudaMallocAsync(&data_, bytes, stream); });
}

StreamScratch StreamScratch::try_allocate(size_t bytes, cudaStream_t stream) {
  StreamScratch scratch;
  scratch.stream_ = stream;
  if (bytes > 0 && cudaMallocAsync(&scratch.data_, bytes, stream) != cudaSuccess) {
    (void)cudaGetLastError();
    scratch.data_ = nullptr;
  }
  return scratch;
}

StreamScratch::StreamScratch(StreamScratch&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), stream_(other.stream_) {}

StreamScratch& StreamScratch::operator=(StreamScratch&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    stream_ = other.stream_;
  }
  return *this;
}

StreamScratch::~StreamScratch() {
  release();
}

void StreamScratch::release() noexcept {
  if (data_ != nullptr) CUDA_RELEASE(cudaFreeAsync(data_, stream_));
  data_ = nullptr;
}

}  // namespace sonata::kernels::cuda

#pragma once
// Page-locked host memory for asynchronous host<->device copies. Blocks are cached by
// power-of-two size; a released block is handed out again only after every copy recorded
// against it (record_use) has finished on the device. Every call touches CUDA on the calling
// thread's device: a thread selects the rank's device first (CudaDeviceGuard).
#include <cuda_runtime_api.h>

#include <cstddef>
#include <map>
#include <mutex>
#include <vector>

namespace sonata {

class PinnedPool {
 public:
  static PinnedPool& instance();
  void* allocate(size_t nbytes);
  void release(void* data);
  // The block holding `data` is read or written by work on `stream`, a stream of the calling
  // thread's device.
  void record_use(void* data, cudaStream_t stream);
  size_t cached_bytes() const;

 private:
  struct Block {
    size_t nbytes = 0;
    bool in_use = false;
    std::vector<cudaEvent_t> pending;  // copies that may still touch the block
  };
  bool ready(Block& block);

  mutable std::mutex mutex_;
  std::map<void*, Block> blocks_;
};

}  // namespace sonata

#pragma once
// A block of memory on one device, shared by every tensor that views it.
#include <cstddef>
#include <functional>
#include <memory>

#include "engine/device.h"
#include "engine/stream_uses.h"

namespace sonata {

struct DeferredInit;  // engine/deferred_init.h

class Storage {
 public:
  using Deleter = std::function<void(void*)>;
  Storage(void* data, size_t nbytes, Device device, Deleter deleter, bool pinned = false);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  // Fresh memory from the device's allocator: aligned CPU memory, the pinned pool, or the
  // stream-ordered CUDA allocator on the device's current stream.
  static std::shared_ptr<Storage> allocate(size_t nbytes, Device device, bool pinned = false);
  // No memory at all, only how the values will be made (engine/deferred_init.h).
  static std::shared_ptr<Storage> deferred(Device device, std::shared_ptr<DeferredInit> recipe);

  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }
  bool pinned() const { return pinned_; }
  // The recipe of a deferred storage; null for real memory.
  DeferredInit* deferred_init() const { return deferred_init_.get(); }

  // Work on `stream` (a cudaStream_t of the memory's device, or of the calling thread's for
  // pinned memory) reads or writes this memory, and is not the stream it was allocated on:
  // freeing then waits for that work (CUDA memory), or the block is not handed out again
  // before it ends (pinned memory). PyTorch's Tensor.record_stream. The stream must outlive
  // the storage. Nothing to do for other memory.
  void record_stream(StreamHandle stream);

 private:
  void* data_;
  size_t nbytes_;
  Device device_;
  Deleter deleter_;
  bool pinned_;
  std::shared_ptr<StreamUses> stream_uses_;  // CUDA blocks only; the deleter holds it too
  std::shared_ptr<DeferredInit> deferred_init_;
};

}  // namespace sonata

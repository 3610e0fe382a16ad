#pragma once
// The record-stream rule of the CUDA allocator (PyTorch's Tensor.record_stream). Device memory
// is freed on the stream it was allocated on, in stream order: work queued on that stream
// before the free is safe. Work on any other stream (a copy stream, a communicator's) is
// not ordered with the free, so the memory could be handed to a new tensor while that work
// still reads or writes it. Such streams are recorded here, and the release makes the home
// stream wait for what each had queued (on the device; the host never waits), then frees.
// No CUDA types here, so that the bookkeeping is tested on the CPU against a fake.
#include <mutex>
#include <vector>

namespace sonata {

using StreamHandle = void*;  // a cudaStream_t

// The device calls a release needs: CUDA's in engine/cuda/cuda_allocator.cpp, a fake in tests.
class StreamOrdering {
 public:
  virtual ~StreamOrdering() = default;
  // Nothing queued on `waiter` after this call runs before the work queued on `used` so far.
  // False when that could not be arranged: the memory must then not be freed.
  virtual bool wait_for(StreamHandle waiter, StreamHandle used) = 0;
  virtual void free_on(void* data, StreamHandle stream) = 0;
};

class StreamUses {
 public:
  explicit StreamUses(StreamHandle home) : home_(home) {}
  StreamUses(const StreamUses&) = delete;
  StreamUses& operator=(const StreamUses&) = delete;

  StreamHandle home() const { return home_; }
  // Work queued on `stream` uses the memory; the home stream and repeats add nothing.
  void record(StreamHandle stream);
  // Frees `data` on the home stream after every recorded use. If a wait cannot be arranged
  // the memory is leaked rather than freed early, and the result is false.
  bool release(void* data, StreamOrdering& ordering);

 private:
  const StreamHandle home_;
  std::mutex mutex_;  // record() may run on any thread that holds the tensor
  std::vector<StreamHandle> others_;
};

}  // namespace sonata

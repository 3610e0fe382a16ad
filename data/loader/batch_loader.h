#pragma once
// The loader: worker threads build the batches of an epoch ahead of the step that needs
// them, in parallel, and hand them out in order through a bounded queue. A batch depends only
// on its items and the epoch (augmentation is keyed by them), so the result is the same for
// any number of workers. A worker's exception reaches the consumer at the batch it broke,
// and stopping (a new epoch, the destructor) with batches in flight never deadlocks.
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "data/loader/host_batch.h"
#include "engine/tensor.h"

namespace sonata {

class BatchLoader {
 public:
  using MakeBatch = std::function<HostBatch(const std::vector<int64_t>& items, int64_t epoch)>;

  // `make` runs on the workers, concurrently: it must be thread-safe. At most `prefetch`
  // batches are built or waiting beyond the one being consumed. With a CUDA device as
  // `pin_for` the workers also copy each batch into page-locked memory (pin_batch in
  // device_stager.h) for fast, asynchronous copies to it, and work on that device
  // (CudaDeviceGuard): pinned memory and its events would otherwise open a context on GPU 0.
  // The CPU (the default) pins nothing; so does a machine without a GPU.
  BatchLoader(MakeBatch make, int64_t workers, int64_t prefetch, Device pin_for = Device::cpu());
  ~BatchLoader();
  BatchLoader(const BatchLoader&) = delete;
  BatchLoader& operator=(const BatchLoader&) = delete;

  // Starts serving `batches[first ...]` of `epoch`, dropping whatever the previous epoch had
  // in flight.
  void start(std::vector<std::vector<int64_t>> batches, int64_t epoch, int64_t first = 0);
  // The next batch in order, waiting for it if needed; nothing at the end of the epoch.
  // Rethrows the exception of the worker that failed to build it.
  std::optional<HostBatch> next();

 private:
  struct Slot {
    std::optional<HostBatch> batch;
    std::exception_ptr error;
  };
  void work(std::exception_ptr no_device);
  void stop_workers();

  MakeBatch make_;
  int64_t workers_, prefetch_;
  Device pin_for_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<std::thread> threads_;
  bool stopping_ = false;

  // The current epoch's plan, guarded by mutex_.
  uint64_t generation_ = 0;  // bumped by start(): work of an older epoch is thrown away
  std::vector<std::vector<int64_t>> batches_;
  int64_t epoch_ = 0;
  size_t next_to_build_ = 0, next_to_serve_ = 0;
  std::map<size_t, Slot> ready_;  // built (or failed) batches not yet served
};

}  // namespace sonata

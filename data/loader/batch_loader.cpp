#include "data/loader/batch_loader.h"

#include <optional>

#include "base/error.h"
#include "data/loader/device_stager.h"
#include "engine/device_thread.h"

namespace sonata {

BatchLoader::BatchLoader(MakeBatch make, int64_t workers, int64_t prefetch, Device pin_for)
    : make_(std::move(make)), workers_(workers), prefetch_(prefetch), pin_for_(pin_for) {
  SONATA_CHECK(workers >= 1, "BatchLoader: workers must be at least 1, got ", workers);
  SONATA_CHECK(prefetch >= 1, "BatchLoader: prefetch must be at least 1, got ", prefetch);
  for (int64_t w = 0; w < workers; ++w)
    threads_.push_back(
        start_device_thread(pin_for_, [this](std::exception_ptr no_device) { work(no_device); }));
}

BatchLoader::~BatchLoader() {
  stop_workers();
}

void BatchLoader::stop_workers() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  for (std::thread& thread : threads_)
    if (thread.joinable()) thread.join();
}

void BatchLoader::start(std::vector<std::vector<int64_t>> batches, int64_t epoch, int64_t first) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++generation_;
    batches_ = std::move(batches);
    epoch_ = epoch;
    next_to_build_ = next_to_serve_ = size_t(std::max<int64_t>(first, 0));
    ready_.clear();
  }
  changed_.notify_all();
}

void BatchLoader::work(std::exception_ptr no_device) {
  // The device is selected for the thread's life (start_device_thread): building, pinning
  // and dropping batches all run here. A failure to select it reaches the consumer with
  // every batch this worker takes.
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    // Build when there is a batch left and the window ahead of the consumer has room.
    changed_.wait(lock, [this] {
      return stopping_ || (next_to_build_ < batches_.size() &&
                           next_to_build_ < next_to_serve_ + size_t(prefetch_));
    });
    if (stopping_) return;
    const size_t index = next_to_build_++;
    const uint64_t generation = generation_;
    const std::vector<int64_t> items = batches_[index];
    const int64_t epoch = epoch_;
    lock.unlock();
    Slot slot;
    try {
      if (no_device) std::rethrow_exception(no_device);
      slot.batch = make_(items, epoch);
      if (pin_for_.is_cuda()) pin_batch(*slot.batch);
    } catch (...) {
      slot.error = std::current_exception();
    }
    lock.lock();
    if (generation == generation_) ready_[index] = std::move(slot);
    changed_.notify_all();
  }
}

std::optional<HostBatch> BatchLoader::next() {
  std::unique_lock<std::mutex> lock(mutex_);
  if (next_to_serve_ >= batches_.size()) return std::nullopt;
  changed_.wait(lock, [this] { return ready_.count(next_to_serve_) > 0; });
  Slot slot = std::move(ready_.at(next_to_serve_));
  ready_.erase(next_to_serve_);
  ++next_to_serve_;
  lock.unlock();
  changed_.notify_all();  // the window moved: a worker may build the next one
  if (slot.error) std::rethrow_exception(slot.error);
  return std::move(slot.batch);
}

}  // namespace sonata

#pragma once
// Resources that queued GPU work may still use (a cuFFT plan's workspace, say): each is
// released only once its `done` test passes, e.g. an event recorded after its last use has
// completed (cudaEventQuery). collect() releases what is ready without waiting, so evicting
// from a cache never needs a device-wide synchronisation. Thread-safe.
#include <cstddef>
#include <functional>
#include <mutex>
#include <vector>

namespace sonata {

class DeferredReleases {
 public:
  // `done` is polled by collect(); `release` runs once, after `done` first returns true.
  void add(std::function<bool()> done, std::function<void()> release);
  // Releases every entry whose `done` now holds, in the order added; returns how many.
  // Releases run outside the lock, so they may add entries themselves.
  size_t collect();
  size_t pending() const;

 private:
  struct Entry {
    std::function<bool()> done;
    std::function<void()> release;
  };
  mutable std::mutex mutex_;
  std::vector<Entry> entries_;
};

}  // namespace sonata

#include "base/deferred_release.h"

#include <utility>

namespace sonata {

void DeferredReleases::add(std::function<bool()> done, std::function<void()> release) {
  const std::lock_guard<std::mutex> lock(mutex_);
  entries_.push_back({std::move(done), std::move(release)});
}

size_t DeferredReleases::collect() {
  std::vector<Entry> ready;
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    std::vector<Entry> waiting;
    for (Entry& entry : entries_) (entry.done() ? ready : waiting).push_back(std::move(entry));
    entries_ = std::move(waiting);
  }
  for (Entry& entry : ready) entry.release();
  return ready.size();
}

size_t DeferredReleases::pending() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return entries_.size();
}

}  // namespace sonata

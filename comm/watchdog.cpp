#include "comm/watchdog.h"

#include <algorithm>
#include <utility>

#include "base/error.h"

namespace sonata {

Watchdog::Watchdog(std::function<void(const std::string&)> expire, WaitClock& clock)
    : expire_(std::move(expire)), clock_(clock) {}

Watchdog::~Watchdog() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Watchdog::set_background(bool background) {
  std::lock_guard<std::mutex> lock(mutex_);
  background_ = background;
}

void Watchdog::watch(Watched watched) {
  const auto deadline =
      clock_.now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                         std::chrono::duration<double>(watched.timeout_s));
  std::lock_guard<std::mutex> lock(mutex_);
  entries_.push_back({std::move(watched), deadline});
  if (background_ && !thread_.joinable()) thread_ = std::thread([this] { run(); });
}

size_t Watchdog::scan() {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto now = clock_.now();
  std::string failure;
  auto finished = [&](const Entry& entry) {
    if (entry.watched.done()) return true;
    if (!failure.empty()) return false;
    if (entry.watched.error) {
      const std::string error = entry.watched.error();
      if (!error.empty()) failure = str(entry.watched.what, " failed: ", error);
    }
    if (failure.empty() && now >= entry.deadline)
      failure = str(entry.watched.what, " did not complete within ", entry.watched.timeout_s,
                    " s (--comm-timeout)",
                    entry.watched.missing ? "; " + entry.watched.missing() : std::string());
    return false;
  };
  entries_.erase(std::remove_if(entries_.begin(), entries_.end(), finished), entries_.end());
  if (!failure.empty()) expire_(failure);
  return entries_.size();
}

void Watchdog::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    wake_.wait_for(lock, kWatchdogPeriod, [this] { return stopping_; });
    if (stopping_) break;
    lock.unlock();
    scan();
    lock.lock();
  }
}

}  // namespace sonata

#include "comm/watchdog.h"

#include <algorithm>
#include <exception>
#include <iterator>
#include <utility>

#include "base/error.h"
#include "engine/device_thread.h"

namespace sonata {
namespace {

std::string describe(std::exception_ptr failure) {
  try {
    std::rethrow_exception(failure);
  } catch (const std::exception& error) {
    return error.what();
  } catch (...) {
    return "unknown exception";
  }
}

}  // namespace

Watchdog::Watchdog(std::function<void(const std::string&)> expire, WaitClock& clock)
    : Watchdog(std::move(expire), Options{}, clock) {}

Watchdog::Watchdog(std::function<void(const std::string&)> expire, Options options,
                   WaitClock& clock)
    : expire_(std::move(expire)),
      clock_(clock),
      device_(options.device),
      monitor_(options.heartbeat_timeout_s, "the communication watchdog",
               std::move(options.heartbeat_abort), clock) {}

Watchdog::~Watchdog() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  // The monitor (a member, destroyed after this body) still watches while this joins.
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
  if (background_ && !thread_.joinable()) {
    thread_ = start_device_thread(device_, [this](std::exception_ptr no_device) {
      if (no_device)
        return expire_(str("the communication watchdog cannot select ", device_.str(), ": ",
                           describe(no_device)));
      run();
    });
    monitor_.start();
  }
}

size_t Watchdog::scan() {
  // Polled without the lock: a poll may block inside the driver, and watch() must not wait
  // behind it. Entries watched meanwhile are kept after these.
  std::vector<Entry> entries;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    entries.swap(entries_);
  }
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
  // Finished entries (and the events they hold) go here, outside the lock too.
  entries.erase(std::remove_if(entries.begin(), entries.end(), finished), entries.end());
  size_t watched = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    entries_.insert(entries_.begin(), std::make_move_iterator(entries.begin()),
                    std::make_move_iterator(entries.end()));
    watched = entries_.size();
  }
  if (!failure.empty()) expire_(failure);
  return watched;
}

void Watchdog::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    wake_.wait_for(lock, kWatchdogPeriod, [this] { return stopping_; });
    if (stopping_) break;
    lock.unlock();
    scan();
    monitor_.beat();
    lock.lock();
  }
}

}  // namespace sonata

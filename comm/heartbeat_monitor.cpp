#include "comm/heartbeat_monitor.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <utility>

#include "base/error.h"

namespace sonata {

double default_heartbeat_timeout_seconds() {
  const char* value = std::getenv("SONATA_HEARTBEAT_TIMEOUT_S");
  if (value == nullptr || *value == '\0') return 480;
  char* end = nullptr;
  const double seconds = std::strtod(value, &end);
  SONATA_CHECK(end != value && *end == '\0' && std::isfinite(seconds) && seconds > 0,
               "SONATA_HEARTBEAT_TIMEOUT_S=", value, " is not a positive number of seconds");
  return seconds;
}

void abort_process(const std::string& message) {
  std::fprintf(stderr, "sonata: %s\n", message.c_str());
  std::fflush(stderr);
  std::abort();
}

HeartbeatMonitor::HeartbeatMonitor(double timeout_s, std::string watched,
                                   std::function<void(const std::string&)> abort, WaitClock& clock)
    : timeout_s_(timeout_s), watched_(std::move(watched)), abort_(std::move(abort)), clock_(clock) {
  SONATA_CHECK(std::isfinite(timeout_s) && timeout_s > 0, "heartbeat timeout ", timeout_s,
               " s must be a positive number of seconds");
  seen_at_ = clock_.now();
}

HeartbeatMonitor::~HeartbeatMonitor() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool HeartbeatMonitor::check() {
  const auto now = clock_.now();
  const uint64_t beats = beats_.load(std::memory_order_relaxed);
  if (beats != seen_beats_) {
    seen_beats_ = beats;
    seen_at_ = now;
    return false;
  }
  if (fired_ || now - seen_at_ <= std::chrono::duration<double>(timeout_s_)) return false;
  fired_ = true;
  abort_(str(watched_, " has not completed a pass for ", timeout_s_,
             " s (SONATA_HEARTBEAT_TIMEOUT_S): it is blocked, probably inside the CUDA driver "
             "or NCCL behind a hung collective; ending the process"));
  return true;
}

void HeartbeatMonitor::start() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (thread_.joinable() || stopping_) return;
  seen_beats_ = beats_.load(std::memory_order_relaxed);
  seen_at_ = clock_.now();
  // A plain std::thread: this thread never touches CUDA, by design (see the header).
  thread_ = std::thread([this] { run(); });
}

void HeartbeatMonitor::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    wake_.wait_for(lock, kHeartbeatCheckPeriod, [this] { return stopping_; });
    if (stopping_) break;
    lock.unlock();
    check();
    lock.lock();
  }
}

}  // namespace sonata

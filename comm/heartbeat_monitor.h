#pragma once
// Watches the watchdog (comm/watchdog.h). The watchdog makes CUDA and NCCL calls (event
// queries, ncclCommGetAsyncError, dropping the last reference to an event): when the main
// thread is stuck inside the driver behind a hung collective, those calls can block too, and
// a blocked watchdog never ends the job. This monitor makes no CUDA, NCCL or MPI call: it
// only reads a counter the watchdog bumps once per pass, and ends the process when the
// counter has not moved for `timeout_s` (PyTorch's heartbeat monitor, PR #110449, which
// likewise aborts the process after TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC, 8 minutes by default).
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "comm/bounded_wait.h"

namespace sonata {

// SONATA_HEARTBEAT_TIMEOUT_S when set (checked), else 480 s, PyTorch's default.
double default_heartbeat_timeout_seconds();

// Writes `message` to stderr and calls std::abort: no CUDA, NCCL or MPI call, which could
// block behind the same hang (the launcher then ends the other ranks).
[[noreturn]] void abort_process(const std::string& message);

class HeartbeatMonitor {
 public:
  // `abort` gets one sentence and must end the process; tests record it instead.
  HeartbeatMonitor(double timeout_s, std::string watched,
                   std::function<void(const std::string&)> abort = abort_process,
                   WaitClock& clock = system_wait_clock());
  // Stops and joins the monitor's thread.
  ~HeartbeatMonitor();
  HeartbeatMonitor(const HeartbeatMonitor&) = delete;
  HeartbeatMonitor& operator=(const HeartbeatMonitor&) = delete;

  // From the watched thread, once per pass; lock-free.
  void beat() { beats_.fetch_add(1, std::memory_order_relaxed); }
  // One look, on the caller's thread: calls `abort` (and returns true) when no beat came for
  // longer than the timeout since the last look that saw one.
  bool check();
  // Starts the thread that looks every period (idempotent). Tests call check() instead.
  void start();

 private:
  void run();

  const double timeout_s_;
  const std::string watched_;
  std::function<void(const std::string&)> abort_;
  WaitClock& clock_;
  std::atomic<uint64_t> beats_{0};
  uint64_t seen_beats_ = 0;
  std::chrono::steady_clock::time_point seen_at_;
  bool fired_ = false;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

// How often the monitor's thread looks.
constexpr std::chrono::milliseconds kHeartbeatCheckPeriod{1000};

}  // namespace sonata

#pragma once
// Watches operations in flight from a thread of its own and ends the job when one has not
// finished within its timeout, or has failed asynchronously. The host may meanwhile be
// blocked anywhere, e.g. in a device copy queued behind a collective whose peer is gone,
// where no poll loop of ours runs (PyTorch's ProcessGroupNCCL watchdog does the same).
// The NCCL group keeps one per communicator; the logic is plain C++, testable on the CPU.
//
// Its thread enters the communicator's device first (engine/device_thread.h): the CUDA calls
// of its passes would otherwise open a context on GPU 0 on every rank. It polls without
// holding its lock, so watch() never waits behind a poll stuck in the driver, and it beats a
// HeartbeatMonitor (comm/heartbeat_monitor.h) once per pass, which ends the process when the
// watchdog itself is stuck.
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "comm/bounded_wait.h"
#include "comm/heartbeat_monitor.h"
#include "engine/device.h"

namespace sonata {

class Watchdog {
 public:
  struct Watched {
    std::function<bool()> done;          // polled from the watchdog's thread
    std::function<std::string()> error;  // non-empty: failed asynchronously (may be empty)
    std::string what;                    // the operation, for the message
    double timeout_s = 600;
    // After a timeout: which ranks did not arrive, appended to the message (may be empty).
    std::function<std::string()> missing;
  };
  struct Options {
    Device device = Device::cpu();  // the thread's device: the communicator's
    double heartbeat_timeout_s = default_heartbeat_timeout_seconds();
    // Ends the process when the watchdog stops beating; tests record it instead.
    std::function<void(const std::string&)> heartbeat_abort = abort_process;
  };
  // `expire` gets one sentence and must end the job (abort_job); tests record it instead.
  Watchdog(std::function<void(const std::string&)> expire, WaitClock& clock = system_wait_clock());
  Watchdog(std::function<void(const std::string&)> expire, Options options,
           WaitClock& clock = system_wait_clock());
  // Stops and joins the thread; operations still watched are no longer watched.
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // Starts watching; the timeout counts from now. Starts the thread on first use.
  void watch(Watched watched);
  // One pass, on the caller's thread: forgets finished operations, calls `expire` for the
  // first one that failed or is overdue. Returns how many are still watched.
  size_t scan();
  // Whether the background thread runs (tests drive scan() themselves when it does not).
  void set_background(bool background);

 private:
  struct Entry {
    Watched watched;
    std::chrono::steady_clock::time_point deadline;
  };
  void run();

  std::function<void(const std::string&)> expire_;
  WaitClock& clock_;
  Device device_;
  HeartbeatMonitor monitor_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<Entry> entries_;
  bool background_ = true;
  bool stopping_ = false;
  std::thread thread_;
};

// How often the background thread looks.
constexpr std::chrono::milliseconds kWatchdogPeriod{100};

}  // namespace sonata

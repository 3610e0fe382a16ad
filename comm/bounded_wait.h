#pragma once
// Every wait in comm/ that can block goes through here: it polls, never blocks inside a
// library call, so that a peer that stopped or died ends the job after the communication
// timeout instead of hanging it (or spinning a core at full speed for ever).
//
// The timeout (seconds) comes from the trainer's --comm-timeout through
// ProcessGroup::set_timeout; without it, from SONATA_NCCL_TIMEOUT_S (an older name kept as
// an alias), else 600.
#include <chrono>
#include <functional>

namespace sonata {

// SONATA_NCCL_TIMEOUT_S when set (checked), else 600.
double default_comm_timeout_seconds();
// Throws naming `what` unless `seconds` is a positive, finite number.
void check_comm_timeout(double seconds, const char* what);

// Time as the poll loop sees it; tests substitute one that only moves when asked to sleep.
class WaitClock {
 public:
  virtual ~WaitClock() = default;
  virtual std::chrono::steady_clock::time_point now() = 0;
  virtual void sleep(std::chrono::microseconds duration) = 0;
};
WaitClock& system_wait_clock();

// Polls `done` until it returns true (then returns true) or `timeout_s` has passed (then
// returns false). The first millisecond polls back to back, for short collectives' latency;
// after that it sleeps between polls, from 20 us doubling to at most 1 ms, so a long wait
// costs almost no CPU. Time in which the process did not run (stopped by SIGSTOP or a
// debugger: a sleep between polls that lasted over a second) does not count against the
// timeout.
bool poll_until(const std::function<bool()>& done, double timeout_s,
                WaitClock& clock = system_wait_clock());

// The longest sleep between two polls (the backoff's cap).
constexpr std::chrono::microseconds kMaxPollSleep{1000};

}  // namespace sonata

#include "comm/bounded_wait.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <thread>

#include "base/error.h"

namespace sonata {
namespace {

class SystemWaitClock final : public WaitClock {
 public:
  std::chrono::steady_clock::time_point now() override { return std::chrono::steady_clock::now(); }
  void sleep(std::chrono::microseconds duration) override { std::this_thread::sleep_for(duration); }
};

constexpr std::chrono::microseconds kSpinFor{1000};
constexpr std::chrono::microseconds kFirstSleep{20};
// A sleep of at most kMaxPollSleep that took this long means the process was not running.
constexpr std::chrono::seconds kNotRunning{1};

}  // namespace

double default_comm_timeout_seconds() {
  if (const char* text = std::getenv("SONATA_NCCL_TIMEOUT_S")) {
    char* end = nullptr;
    const double seconds = std::strtod(text, &end);
    SONATA_CHECK(end != text && *end == '\0' && seconds > 0 && std::isfinite(seconds),
                 "SONATA_NCCL_TIMEOUT_S='", text, "' is not a positive number of seconds");
    return seconds;
  }
  return 600;
}

void check_comm_timeout(double seconds, const char* what) {
  SONATA_CHECK(seconds > 0 && std::isfinite(seconds), what, " must be a positive number of ",
               "seconds, got ", seconds);
}

WaitClock& system_wait_clock() {
  static SystemWaitClock clock;
  return clock;
}

bool poll_until(const std::function<bool()>& done, double timeout_s, WaitClock& clock) {
  const auto start = clock.now();
  auto deadline = start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                              std::chrono::duration<double>(timeout_s));
  std::chrono::microseconds pause{0};
  for (;;) {
    if (done()) return true;
    const auto now = clock.now();
    if (now >= deadline) return false;
    if (now - start < kSpinFor) continue;
    pause = pause.count() == 0 ? kFirstSleep : std::min(pause * 2, kMaxPollSleep);
    clock.sleep(pause);
    // A sleep that lasted far longer than asked: the process did not run (SIGSTOP, a
    // debugger, a suspended machine), so it did not wait either. That time does not count,
    // so that on waking it polls again rather than time out on its own absence and blame
    // its peers for it.
    const auto slept = clock.now() - now;
    if (slept > kNotRunning) deadline += slept - pause;
  }
}

}  // namespace sonata

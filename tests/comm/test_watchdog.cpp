// The watchdog that ends a job whose collective hangs while the host is blocked elsewhere
// (comm/watchdog.h). Its passes run here on a clock that moves only when told, so overdue
// and not-yet-overdue are decided by the test, not by real time.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <future>
#include <string>
#include <vector>

#include "comm/watchdog.h"

using namespace sonata;

namespace {

class ManualClock final : public WaitClock {
 public:
  std::chrono::steady_clock::time_point now() override { return time; }
  void sleep(std::chrono::microseconds duration) override { time += duration; }
  void advance(double seconds) {
    time += std::chrono::duration_cast<std::chrono::steady_clock::duration>(
        std::chrono::duration<double>(seconds));
  }
  std::chrono::steady_clock::time_point time{};
};

}  // namespace

TEST_CASE("the watchdog ends the job for an operation overdue or failed, not for one done",
          "[comm][watchdog]") {
  ManualClock clock;
  std::vector<std::string> expired;
  Watchdog watchdog([&](const std::string& message) { expired.push_back(message); }, clock);
  watchdog.set_background(false);
  bool first_done = false;
  std::string second_error;
  bool second_done = false;
  watchdog.watch({[&] { return first_done; }, nullptr, "all_reduce #1", 5, nullptr});
  watchdog.watch(
      {[&] { return second_done; }, [&] { return second_error; }, "all_gather #2", 50, nullptr});

  clock.advance(4);
  CHECK(watchdog.scan() == 2);
  CHECK(expired.empty());  // neither overdue nor failed yet

  first_done = true;
  clock.advance(2);  // past the first one's timeout, but it has finished
  CHECK(watchdog.scan() == 1);
  CHECK(expired.empty());

  second_error = "unhandled system error";  // as ncclCommGetAsyncError reports it
  watchdog.scan();
  REQUIRE(expired.size() == 1);
  CHECK(expired[0] == "all_gather #2 failed: unhandled system error");

  second_error.clear();
  expired.clear();
  clock.advance(50);
  watchdog.scan();
  REQUIRE(expired.size() == 1);
  CHECK(expired[0] == "all_gather #2 did not complete within 50 s (--comm-timeout)");

  // Who did not arrive is asked only once the operation is overdue.
  second_done = true;
  int asked = 0;
  watchdog.watch({[] { return false; }, nullptr, "barrier #3", 10,
                  [&] {
                    ++asked;
                    return std::string("rank(s) that did not arrive: 1");
                  }});
  expired.clear();
  clock.advance(1);
  watchdog.scan();
  CHECK(asked == 0);
  clock.advance(10);
  watchdog.scan();
  CHECK(asked == 1);
  REQUIRE(expired.size() == 1);
  CHECK(expired[0] ==
        "barrier #3 did not complete within 10 s (--comm-timeout); rank(s) that did not "
        "arrive: 1");
}

TEST_CASE("the watchdog's own thread notices an overdue operation", "[comm][watchdog]") {
  // Real clock, but nothing waits on time: the operation is overdue at once, and the test
  // waits (bounded by ctest's timeout) for the thread to report it.
  std::promise<std::string> reported;
  std::atomic<bool> once{false};
  Watchdog watchdog([&](const std::string& message) {
    if (!once.exchange(true)) reported.set_value(message);
  });
  watchdog.watch({[] { return false; }, nullptr, "barrier", 1e-9, nullptr});
  CHECK(reported.get_future().get() == "barrier did not complete within 1e-09 s (--comm-timeout)");
}

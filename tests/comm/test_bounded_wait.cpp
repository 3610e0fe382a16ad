// The poll loop every blocking wait in comm/ uses, on a clock that moves only when read
// (a fixed tick) or slept on: the timeout and the backoff are checked without real time.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdlib>
#include <vector>

#include "base/error.h"
#include "comm/bounded_wait.h"
#include "comm/single_group.h"

using namespace sonata;
using std::chrono::microseconds;

namespace {

class FakeClock final : public WaitClock {
 public:
  std::chrono::steady_clock::time_point now() override {
    time += microseconds(10);  // every reading takes a little time, as a real poll does
    return time;
  }
  void sleep(microseconds duration) override {
    sleeps.push_back(duration);
    time += duration + stop_in_next_sleep;  // SIGSTOP, then SIGCONT that much later
    stop_in_next_sleep = {};
  }
  std::chrono::steady_clock::time_point time{};
  std::chrono::steady_clock::duration stop_in_next_sleep{};
  std::vector<microseconds> sleeps;
};

}  // namespace

TEST_CASE("poll_until returns once the condition holds, without sleeping early on",
          "[comm][timeout]") {
  FakeClock clock;
  int polls = 0;
  CHECK(poll_until([&] { return ++polls == 5; }, 1.0, clock));
  CHECK(polls == 5);
  CHECK(clock.sleeps.empty());  // a short wait spins: no added latency
}

TEST_CASE("poll_until gives up after the timeout, sleeping between polls with a capped backoff",
          "[comm][timeout]") {
  FakeClock clock;
  const auto start = clock.time;
  int polls = 0;
  CHECK_FALSE(poll_until([&] { return ++polls < 0; }, 2.0, clock));
  const double waited = std::chrono::duration<double>(clock.time - start).count();
  CHECK(waited >= 2.0);
  CHECK(waited < 2.0 + 0.01);  // fake time: it stops at the first poll past the deadline
  // A long wait sleeps between nearly all of its polls (not a busy spin), and every sleep
  // stays at or below the cap while growing to it.
  REQUIRE(clock.sleeps.size() > 1000);
  CHECK(clock.sleeps.front() < kMaxPollSleep);
  CHECK(clock.sleeps.back() == kMaxPollSleep);
  bool growing = true;
  for (size_t i = 1; i < clock.sleeps.size(); ++i)
    growing = growing && clock.sleeps[i] >= clock.sleeps[i - 1];
  CHECK(growing);
  CHECK(polls >= int(clock.sleeps.size()));
}

TEST_CASE("poll_until does not count the time its process was stopped against the timeout",
          "[comm][timeout]") {
  // The process is stopped (SIGSTOP) for 700 s in the first sleep after 0.5 s of a 2 s wait;
  // what it waits for is done 0.1 s after it is continued.
  FakeClock clock;
  const auto start = clock.time;
  std::chrono::steady_clock::time_point continued{};
  const bool done = poll_until(
      [&] {
        if (continued == std::chrono::steady_clock::time_point{} &&
            clock.time - start > std::chrono::milliseconds(500)) {
          clock.stop_in_next_sleep = std::chrono::seconds(700);
          continued = clock.time + std::chrono::seconds(700);
        }
        return continued != std::chrono::steady_clock::time_point{} &&
               clock.time > continued + std::chrono::milliseconds(100);
      },
      2.0, clock);
  CHECK(done);  // not a timeout that the peers would be blamed for
  // A wait that is never answered still ends after 2 s of its own running time.
  FakeClock again;
  const auto again_start = again.time;
  again.stop_in_next_sleep = std::chrono::seconds(700);
  CHECK_FALSE(poll_until([] { return false; }, 2.0, again));
  const double waited = std::chrono::duration<double>(again.time - again_start).count();
  CHECK(waited >= 702.0);
  CHECK(waited < 702.0 + 0.01);
}

TEST_CASE("the communication timeout is a positive number of seconds", "[comm][timeout]") {
  SingleGroup group;
  group.set_timeout(5);
  CHECK(group.timeout() == 5);
  CHECK(group.split(0, 0)->timeout() == 5);
  CHECK_THROWS_WITH(group.set_timeout(0), Catch::Contains("positive number of seconds, got 0"));
  CHECK_THROWS_WITH(group.set_timeout(-3), Catch::Contains("got -3"));
}

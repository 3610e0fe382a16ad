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
    time += duration;
  }
  std::chrono::steady_clock::time_point time{};
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

TEST_CASE("the communication timeout is a positive number of seconds", "[comm][timeout]") {
  SingleGroup group;
  group.set_timeout(5);
  CHECK(group.timeout() == 5);
  CHECK(group.split(0, 0)->timeout() == 5);
  CHECK_THROWS_WITH(group.set_timeout(0), Catch::Contains("positive number of seconds, got 0"));
  CHECK_THROWS_WITH(group.set_timeout(-3), Catch::Contains("got -3"));
}

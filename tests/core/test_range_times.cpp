// base/nvtx's host timer: each range's calls, inclusive and self time, per name; nesting
// subtracts a child's time from its parent only on the thread that opened both.
#include <catch2/catch.hpp>

#include <map>
#include <string>
#include <thread>

#include "base/nvtx.h"

using namespace sonata;

namespace {

std::map<std::string, RangeTime> times_by_name() {
  std::map<std::string, RangeTime> out;
  for (const RangeTime& t : range_times()) out[t.name] = t;
  return out;
}

void busy_range(const char* name, int rounds) {
  SONATA_NVTX_RANGE(name);
  volatile double sink = 0;
  for (int i = 0; i < rounds; ++i) sink = sink + 1e-9 * i;
}

}  // namespace

TEST_CASE("range times: nested ranges count calls, inclusive and self time", "[nvtx]") {
  range_times_enable(true);
  for (int repeat = 0; repeat < 3; ++repeat) {
    SONATA_NVTX_RANGE("test::outer");
    busy_range("test::inner", 20000);
    busy_range("test::inner", 20000);
  }
  range_times_enable(false);
  busy_range("test::after_stop", 10);  // not recorded

  const auto times = times_by_name();
  REQUIRE(times.count("test::outer") == 1);
  REQUIRE(times.count("test::inner") == 1);
  CHECK(times.count("test::after_stop") == 0);
  const RangeTime& outer = times.at("test::outer");
  const RangeTime& inner = times.at("test::inner");
  CHECK(outer.calls == 3);
  CHECK(inner.calls == 6);
  // A leaf's self time is all of it; the parent's self time is what its children left.
  CHECK(inner.self_s == Approx(inner.inclusive_s).epsilon(1e-12));
  CHECK(outer.self_s + inner.inclusive_s == Approx(outer.inclusive_s).epsilon(1e-9));
  CHECK(outer.self_s >= 0);
  CHECK(inner.inclusive_s > 0);
  // Sorted by self time, the largest first.
  const auto sorted = range_times();
  for (size_t i = 1; i < sorted.size(); ++i) CHECK(sorted[i - 1].self_s >= sorted[i].self_s);
}

TEST_CASE("range times: another thread's ranges are not children of this thread's", "[nvtx]") {
  range_times_enable(true);
  {
    SONATA_NVTX_RANGE("test::main_thread");
    std::thread worker([] { busy_range("test::worker", 200000); });
    worker.join();
  }
  range_times_enable(false);
  const auto times = times_by_name();
  REQUIRE(times.count("test::worker") == 1);
  const RangeTime& main_range = times.at("test::main_thread");
  // The main thread waited for the worker inside its range, and that wait stays its own.
  CHECK(main_range.self_s == Approx(main_range.inclusive_s).epsilon(1e-12));
  CHECK(main_range.inclusive_s >= times.at("test::worker").inclusive_s);
}

TEST_CASE(
    "range times: starting again clears the sums, and a range open across the start "
    "adds nothing",
    "[nvtx]") {
  range_times_enable(true);
  busy_range("test::old", 10);
  range_times_enable(false);
  {
    SONATA_NVTX_RANGE("test::spanning");
    range_times_enable(true);
    busy_range("test::new", 10);
  }
  range_times_enable(false);
  const auto times = times_by_name();
  CHECK(times.count("test::old") == 0);
  CHECK(times.count("test::spanning") == 0);
  REQUIRE(times.count("test::new") == 1);
  CHECK(times.at("test::new").calls == 1);
}

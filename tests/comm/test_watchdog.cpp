// The watchdog that ends a job whose collective hangs while the host is blocked elsewhere
// (comm/watchdog.h). Its passes run here on a clock that moves only when told, so overdue
// and not-yet-overdue are decided by the test, not by real time.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "comm/heartbeat_monitor.h"
#include "comm/watchdog.h"
#include "engine/device_guard.h"

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

namespace {

// Records which device the watchdog's thread selects (no GPU needed).
std::mutex g_selected_mutex;
std::vector<std::pair<std::thread::id, int>> g_selected;
void record_selection(int index) {
  const std::lock_guard<std::mutex> lock(g_selected_mutex);
  g_selected.emplace_back(std::this_thread::get_id(), index);
}

}  // namespace

TEST_CASE("the watchdog's thread polls on the communicator's device", "[comm][watchdog]") {
  // Its polls (cudaEventQuery) and the events it drops belong to the communicator's device;
  // a thread that never selected one opens a context on GPU 0 at its first CUDA call.
  g_selected.clear();
  const SelectCudaDevice previous = replace_select_cuda_device(record_selection);
  std::promise<std::pair<std::thread::id, int>> polled;
  std::atomic<bool> once{false};
  {
    Watchdog::Options options;
    options.device = Device::cuda(3);
    Watchdog watchdog([](const std::string&) {}, options);
    watchdog.watch({[&] {
                      if (!once.exchange(true))
                        polled.set_value({std::this_thread::get_id(), current_cuda_device()});
                      return true;
                    },
                    nullptr, "all_reduce", 600, nullptr});
    const auto [thread, device] = polled.get_future().get();
    CHECK(thread != std::this_thread::get_id());
    CHECK(device == 3);
  }
  replace_select_cuda_device(previous);
  const std::lock_guard<std::mutex> lock(g_selected_mutex);
  REQUIRE(g_selected.size() == 1);
  CHECK(g_selected[0].second == 3);
  CHECK(g_selected[0].first != std::this_thread::get_id());
}

TEST_CASE("the heartbeat monitor ends the process when the watched thread stops beating",
          "[comm][watchdog]") {
  ManualClock clock;
  std::vector<std::string> aborted;
  HeartbeatMonitor monitor(
      30, "the communication watchdog",
      [&](const std::string& message) { aborted.push_back(message); }, clock);
  for (int pass = 0; pass < 10; ++pass) {  // beating: never, however long the run
    clock.advance(20);
    monitor.beat();
    CHECK_FALSE(monitor.check());
  }
  clock.advance(29);
  CHECK_FALSE(monitor.check());  // not beating, but not for 30 s yet
  clock.advance(2);
  CHECK(monitor.check());
  REQUIRE(aborted.size() == 1);
  CHECK(aborted[0].rfind("the communication watchdog has not completed a pass for 30 s", 0) == 0);
  clock.advance(100);
  CHECK_FALSE(monitor.check());  // once
  CHECK(aborted.size() == 1);
}

TEST_CASE("a watchdog stuck in a poll neither blocks watch() nor escapes the heartbeat monitor",
          "[comm][watchdog]") {
  // A poll that blocks, as cudaEventQuery can inside a driver held by a hung collective.
  std::promise<void> entered, release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<bool> first{true};
  std::promise<std::string> aborted;
  std::atomic<bool> once{false};
  Watchdog::Options options;
  options.heartbeat_timeout_s = 0.01;
  options.heartbeat_abort = [&](const std::string& message) {
    if (!once.exchange(true)) aborted.set_value(message);
  };
  Watchdog watchdog([](const std::string&) {}, options);
  watchdog.watch({[&] {
                    if (first.exchange(false)) {
                      entered.set_value();
                      released.wait();
                    }
                    return false;
                  },
                  nullptr, "all_reduce", 600, nullptr});
  entered.get_future().wait();
  // The poll holds no lock: another operation can be watched meanwhile (this hung before).
  watchdog.watch({[] { return true; }, nullptr, "broadcast", 600, nullptr});
  // The monitor, which makes no CUDA call, notices the watchdog stopped beating.
  const std::string message = aborted.get_future().get();
  CHECK(message.find("the communication watchdog has not completed a pass") == 0);
  release.set_value();
}

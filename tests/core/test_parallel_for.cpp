// base/parallel_for: every item once, and a failure reported for the first bad item in
// order, whatever thread fails first.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "base/parallel_for.h"

using sonata::parallel_for;

TEST_CASE("parallel_for runs every item exactly once", "[parallel_for]") {
  for (const int64_t workers : {1, 3, 8}) {
    std::vector<std::atomic<int>> runs(97);
    parallel_for(97, workers, [&](int64_t i) { ++runs[size_t(i)]; });
    for (const auto& count : runs) CHECK(count.load() == 1);
  }
}

TEST_CASE("parallel_for rethrows the lowest failing item even when a later one fails first",
          "[parallel_for]") {
  std::vector<std::atomic<int>> runs(64);
  std::atomic<bool> later_failed{false};
  auto body = [&](int64_t i) {
    ++runs[size_t(i)];
    if (i == 4) {
      later_failed = true;
      throw std::runtime_error("item 4");
    }
    if (i == 3) {
      // Fails only after item 4 has (another thread takes 4 while this one waits; the
      // deadline only keeps a broken parallel_for from hanging the test).
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
      while (!later_failed && std::chrono::steady_clock::now() < deadline)
        std::this_thread::yield();
      throw std::runtime_error("item 3");
    }
  };
  CHECK_THROWS_WITH(parallel_for(64, 4, body), "item 3");
  CHECK(later_failed);
  // Every item up to the failures ran, once (items after them may or may not have started).
  for (int i = 0; i <= 4; ++i) CHECK(runs[size_t(i)].load() == 1);
}

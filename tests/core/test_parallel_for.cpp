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
  auto body = [&](int64_t i) {
    ++runs[size_t(i)];
    if (i == 3) {
      // Slow: items 4 and 5 fail long before this one does.
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      throw std::runtime_error("item 3");
    }
    if (i == 4 || i == 5) throw std::runtime_error("item " + std::to_string(i));
  };
  CHECK_THROWS_WITH(parallel_for(64, 4, body), "item 3");
  // Every item up to the first failure ran, and item 4 (handed out next, failing at once);
  // nothing started long after it.
  for (int i = 0; i <= 4; ++i) CHECK(runs[size_t(i)].load() == 1);
  int started = 0;
  for (const auto& count : runs) started += count.load();
  CHECK(started < 64);
}

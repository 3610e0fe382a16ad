// The bounded caches behind the per-shape GPU plans (base/lru_cache.h) and the deferral of
// their destruction until queued work is done (base/deferred_release.h), driven on the CPU
// with plain values and flags standing in for plans and events.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "base/deferred_release.h"
#include "base/error.h"
#include "base/lru_cache.h"

using namespace sonata;

TEST_CASE("LruCache keeps the most recently used entries within its bound", "[core][cache]") {
  LruCache<int, std::string> cache(3);
  CHECK(cache.insert(1, "one").empty());
  CHECK(cache.insert(2, "two").empty());
  CHECK(cache.insert(3, "three").empty());
  CHECK(cache.keys() == std::vector<int>{3, 2, 1});
  // A lookup makes 1 the most recent, so 2 is the one to go when 4 arrives.
  REQUIRE(cache.find(1) != nullptr);
  CHECK(*cache.find(1) == "one");
  CHECK(cache.find(7) == nullptr);
  const auto evicted = cache.insert(4, "four");
  REQUIRE(evicted.size() == 1);
  CHECK(evicted[0].first == 2);
  CHECK(evicted[0].second == "two");
  CHECK(cache.size() == 3);
  CHECK(cache.find(2) == nullptr);
  CHECK(cache.keys() == std::vector<int>{4, 1, 3});
  // Shrinking hands back the least recent first.
  const auto shrunk = cache.set_capacity(1);
  REQUIRE(shrunk.size() == 2);
  CHECK(shrunk[0].first == 3);
  CHECK(shrunk[1].first == 1);
  CHECK(cache.keys() == std::vector<int>{4});
}

TEST_CASE("LruCache refuses a zero bound and a duplicate key", "[core][cache]") {
  using IntCache = LruCache<int, int>;
  CHECK_THROWS_AS(IntCache(0), Error);
  LruCache<int, int> cache(2);
  cache.insert(5, 50);
  CHECK_THROWS_AS(cache.insert(5, 51), Error);
  CHECK_THROWS_AS(cache.set_capacity(0), Error);
  CHECK(*cache.find(5) == 50);
}

TEST_CASE("DeferredReleases releases an evicted plan only once its work is done", "[core][cache]") {
  DeferredReleases pending;
  std::vector<std::string> released;
  bool first_done = false, second_done = false;
  pending.add([&] { return first_done; }, [&] { released.push_back("first"); });
  pending.add([&] { return second_done; }, [&] { released.push_back("second"); });
  // Nothing has completed: nothing is destroyed and nothing waits.
  CHECK(pending.collect() == 0);
  CHECK(released.empty());
  CHECK(pending.pending() == 2);
  // The second's event completes first: it goes alone.
  second_done = true;
  CHECK(pending.collect() == 1);
  CHECK(released == std::vector<std::string>{"second"});
  first_done = true;
  CHECK(pending.collect() == 1);
  CHECK(released == std::vector<std::string>{"second", "first"});
  CHECK(pending.pending() == 0);
  CHECK(pending.collect() == 0);  // each release runs once
  CHECK(released.size() == 2);
}

TEST_CASE("An LruCache whose evictions go through DeferredReleases stays bounded",
          "[core][cache]") {
  // The owners' pattern (kernels/cuda/mel.cu): evicted plans wait for their last use.
  LruCache<int, int> cache(2);
  DeferredReleases pending;
  std::vector<int> destroyed;
  std::vector<bool> work_done(6, false);
  for (int key = 0; key < 6; ++key)
    for (auto& [old_key, plan] : cache.insert(key, key * 10))
      pending.add([&work_done, k = old_key] { return bool(work_done[size_t(k)]); },
                  [&destroyed, p = plan] { destroyed.push_back(p); });
  CHECK(cache.size() == 2);
  CHECK(pending.pending() == 4);
  pending.collect();
  CHECK(destroyed.empty());
  work_done[1] = work_done[3] = true;
  pending.collect();
  CHECK(destroyed == std::vector<int>{10, 30});
  CHECK(pending.pending() == 2);
}

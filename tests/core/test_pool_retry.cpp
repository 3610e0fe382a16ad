// Out of device memory (kernels/common/pool_retry.h), with the CUDA calls injected: the
// allocation synchronises, trims the pool and retries once before failing, and the failure
// names the request, the pool's used/reserved bytes and the device.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "base/error.h"
#include "kernels/common/pool_retry.h"

using namespace sonata;
using namespace sonata::kernels;

namespace {

struct Recorder {
  std::vector<std::string> calls;
  int failures_left = 0;  // allocations that report out of memory before one succeeds
  PoolRetryCalls pool() {
    PoolRetryCalls c;
    c.allocate = [this] {
      calls.push_back("allocate");
      return failures_left-- <= 0;
    };
    c.synchronize = [this] { calls.push_back("synchronize"); };
    c.trim = [this] { calls.push_back("trim"); };
    c.usage = [this] {
      calls.push_back("usage");
      return PoolUsage{uint64_t(70) << 30, uint64_t(72) << 30, uint64_t(1) << 29,
                       uint64_t(80) << 30};
    };
    return c;
  }
};

}  // namespace

TEST_CASE("an allocation that fits touches nothing else", "[core][allocator]") {
  Recorder recorder;
  allocate_with_retry("a tensor", 1024, 0, recorder.pool());
  CHECK(recorder.calls == std::vector<std::string>{"allocate"});
}

TEST_CASE("out of memory synchronises, trims the pool and retries once", "[core][allocator]") {
  Recorder recorder;
  recorder.failures_left = 1;
  allocate_with_retry("a tensor", 1024, 0, recorder.pool());
  CHECK(recorder.calls == std::vector<std::string>{"allocate", "synchronize", "trim", "allocate"});
}

TEST_CASE("out of memory after the retry names the size, the pool and the device",
          "[core][allocator]") {
  Recorder recorder;
  recorder.failures_left = 2;
  std::string message;
  try {
    allocate_with_retry("a tensor", size_t(3) << 30, 5, recorder.pool());
  } catch (const Error& error) {
    message = error.what();
  }
  CHECK(recorder.calls ==
        std::vector<std::string>{"allocate", "synchronize", "trim", "allocate", "usage"});
  CHECK(message.find("CUDA out of memory on cuda:5 allocating 3.00 GiB (3221225472 bytes) for "
                     "a tensor") != std::string::npos);
  CHECK(message.find("the pool holds 72.00 GiB of which 70.00 GiB in use") != std::string::npos);
  CHECK(message.find("the device has 0.50 GiB free of 80.00 GiB") != std::string::npos);
}

TEST_CASE("the pool gives back all but what leaves the libraries room", "[core][allocator]") {
  const uint64_t gib = uint64_t(1) << 30;
  CHECK(pool_release_threshold(80 * gib) == 75 * gib);  // an H100: 1/16 left over
  CHECK(pool_release_threshold(8 * gib) == 7 * gib);    // at least 1 GiB
  CHECK(pool_release_threshold(gib / 2) == 0);
}

TEST_CASE("SONATA_CUDA_POOL_CACHE_MB caps what the pool keeps cached", "[core][allocator]") {
  const uint64_t gib = uint64_t(1) << 30;
  CHECK(pool_release_threshold(80 * gib, nullptr) == 75 * gib);  // unset: the default
  CHECK(pool_release_threshold(80 * gib, "") == 75 * gib);
  CHECK(pool_release_threshold(80 * gib, "8192") == 8 * gib);  // 8 test processes on one card
  CHECK(pool_release_threshold(80 * gib, "0") == 0);           // nothing cached past a sync
  CHECK(pool_release_threshold(8 * gib, "16384") == 7 * gib);  // never above the default
  for (const char* bad : {"8G", "-1", " 5", "1.5", "99999999999999999999"})
    CHECK_THROWS_WITH(pool_release_threshold(80 * gib, bad),
                      Catch::Contains("SONATA_CUDA_POOL_CACHE_MB") && Catch::Contains(bad));
}

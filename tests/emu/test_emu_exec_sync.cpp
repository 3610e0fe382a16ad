// Barriers and warp collectives: synccheck's divergence and mask errors, and the results
// of __syncthreads_or/_and/_count, shuffles (with width) and votes.
#include <catch2/catch.hpp>

#include "kernels/exec_kernels.h"
#include "test_emu_exec_support.h"

using namespace sonata::emu::test;

TEST_CASE("emu exec: half the block at a __syncthreads the other half skipped is divergent",
          "[emu][exec][defect]") {
  int* out = device_array<int>(64);
  const Outcome bad = run([&] { return half_block_barrier(out, false); });
  CHECK(bad.sync == cudaErrorLaunchFailure);
  CHECK_THAT(bad.message, Catch::Contains("synccheck: Barrier error detected"));
  CHECK_THAT(bad.message, Catch::Contains("half_block_barrier_kernel"));
  CHECK_THAT(bad.message, Catch::Contains("waits at __syncthreads"));
  const Outcome good = run([&] { return half_block_barrier(out, true); });
  CHECK(good.sync == cudaSuccess);
  cudaFree(out);
}

TEST_CASE("emu exec: threads that exited do not count at a barrier", "[emu][exec]") {
  int* out = device_array<int>(64);
  const Outcome outcome = run([&] { return barrier_after_exit(out); });
  REQUIRE(outcome.sync == cudaSuccess);
  const std::vector<int> result = host_copy(out, 32);
  CHECK(result == std::vector<int>(32, 7));
  cudaFree(out);
}

TEST_CASE("emu exec: live threads at two different __syncthreads are divergent",
          "[emu][exec][defect]") {
  int* out = device_array<int>(64);
  const Outcome bad = run([&] { return two_site_barrier(out, false); });
  CHECK(bad.sync == cudaErrorLaunchFailure);
  CHECK_THAT(bad.message, Catch::Contains("synccheck: Barrier error detected"));
  CHECK_THAT(bad.message, Catch::Contains("exec_kernels.cu:"));
  const Outcome good = run([&] { return two_site_barrier(out, true); });
  CHECK(good.sync == cudaSuccess);
  cudaFree(out);
}

TEST_CASE("emu exec: __syncthreads_or, _and and _count reduce over the block", "[emu][exec]") {
  const int threads = 96;
  int* out = device_array<int>(3 * threads);
  for (const int set : {-1, 0, 17, 95, 1000}) {
    std::vector<int> predicates(threads, set == 1000 ? 1 : 0);
    if (set >= 0 && set < threads) predicates[set] = 5;  // any non-zero value counts
    int* p = device_copy(predicates);
    const Outcome outcome = run([&] { return syncthreads_reductions(p, out, threads); });
    REQUIRE(outcome.sync == cudaSuccess);
    const std::vector<int> result = host_copy(out, 3 * threads);
    int count = 0;
    for (int v : predicates) count += v != 0;
    for (int t = 0; t < threads; ++t) {
      CHECK(result[3 * t + 0] == (count > 0 ? 1 : 0));
      CHECK(result[3 * t + 1] == (count == threads ? 1 : 0));
      CHECK(result[3 * t + 2] == count);
    }
    cudaFree(p);
  }
  cudaFree(out);
}

TEST_CASE("emu exec: a shuffle whose mask names an exited lane is caught", "[emu][exec][defect]") {
  std::vector<int> host(32);
  for (int i = 0; i < 32; ++i) host[i] = i;
  int* in = device_copy(host);
  int* out = device_array<int>(32);
  const Outcome bad = run([&] { return partial_warp_sum(in, out, false); });
  CHECK(bad.sync == cudaErrorLaunchFailure);
  CHECK_THAT(bad.message, Catch::Contains("synccheck: Invalid mask"));
  CHECK_THAT(bad.message, Catch::Contains("__shfl_xor_sync"));
  CHECK_THAT(bad.message, Catch::Contains("names lane 16"));
  CHECK_THAT(bad.message, Catch::Contains("has exited"));
  const Outcome good = run([&] { return partial_warp_sum(in, out, true); });
  REQUIRE(good.sync == cudaSuccess);
  const std::vector<int> result = host_copy(out, 16);
  CHECK(result == std::vector<int>(16, 120));  // 0 + 1 + ... + 15
  cudaFree(in);
  cudaFree(out);
}

TEST_CASE("emu exec: shuffles follow CUDA's lane rules for every width", "[emu][exec]") {
  std::vector<int> host(32);
  for (int i = 0; i < 32; ++i) host[i] = 1000 + i;
  int* in = device_copy(host);
  int* out = device_array<int>(4 * 32);
  for (const int width : {32, 16, 8, 4}) {
    const Outcome outcome = run([&] { return shuffles(in, out, width); });
    REQUIRE(outcome.sync == cudaSuccess);
    const std::vector<int> result = host_copy(out, 4 * 32);
    for (int lane = 0; lane < 32; ++lane) {
      const int base = lane / width * width;
      CHECK(result[4 * lane + 0] == 1000 + base + 3 % width);
      CHECK(result[4 * lane + 1] == 1000 + (lane - 2 >= base ? lane - 2 : lane));
      CHECK(result[4 * lane + 2] == 1000 + (lane + 2 < base + width ? lane + 2 : lane));
      const int x = lane ^ 5;
      CHECK(result[4 * lane + 3] == 1000 + (x < base + width ? x : lane));
    }
  }
  cudaFree(in);
  cudaFree(out);
}

TEST_CASE("emu exec: ballot, any and all vote over the warp", "[emu][exec]") {
  std::vector<int> predicates(32, 0);
  predicates[3] = predicates[30] = 1;
  int* p = device_copy(predicates);
  unsigned* out = device_array<unsigned>(3 * 32);
  REQUIRE(run([&] { return votes(p, out); }).sync == cudaSuccess);
  const std::vector<unsigned> result = host_copy(out, 3 * 32);
  for (int lane = 0; lane < 32; ++lane) {
    CHECK(result[3 * lane + 0] == ((1u << 3) | (1u << 30)));
    CHECK(result[3 * lane + 1] == 1u);
    CHECK(result[3 * lane + 2] == 0u);
  }
  cudaFree(p);
  cudaFree(out);
}

TEST_CASE("emu exec: a vote whose mask names a lane waiting at a barrier is caught",
          "[emu][exec][defect]") {
  unsigned* out = device_array<unsigned>(32);
  const Outcome bad = run([&] { return vote_with_lane_at_barrier(out, false); });
  CHECK(bad.sync == cudaErrorLaunchFailure);
  CHECK_THAT(bad.message, Catch::Contains("synccheck: Invalid mask"));
  CHECK_THAT(bad.message, Catch::Contains("__ballot_sync"));
  CHECK_THAT(bad.message,
             Catch::Contains("names lane 0 (thread (0,0,0)), which waits at __syncthreads"));
  const Outcome good = run([&] { return vote_with_lane_at_barrier(out, true); });
  REQUIRE(good.sync == cudaSuccess);
  CHECK(host_copy(out, 32) == std::vector<unsigned>(32, 0xffffffffu));
  cudaFree(out);
}

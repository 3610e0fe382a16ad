// Shared memory: racecheck (two threads, one writing, same byte, no barrier between;
// warp-synchronous accesses ordered by __syncwarp), initcheck (shared memory starts
// undefined in each block), the static limit, and atomics that do not race.
#include <catch2/catch.hpp>

#include "kernels/exec_kernels.h"
#include "test_emu_exec_support.h"

using namespace sonata::emu::test;

TEST_CASE("emu exec: a missing __syncthreads is a shared-memory race", "[emu][exec][defect]") {
  std::vector<float> host(64);
  for (int i = 0; i < 64; ++i) host[i] = float(i);
  float* in = device_copy(host);
  float* out = device_array<float>(64);
  const Outcome bad = run([&] { return neighbour_swap(in, out, false); });
  CHECK(bad.sync == cudaErrorLaunchFailure);
  CHECK_THAT(bad.message, Catch::Contains("racecheck:"));
  CHECK_THAT(bad.message, Catch::Contains("neighbour_swap_kernel"));
  const Outcome good = run([&] { return neighbour_swap(in, out, true); });
  REQUIRE(good.sync == cudaSuccess);
  const std::vector<float> result = host_copy(out, 64);
  for (int i = 0; i < 64; ++i) CHECK(result[i] == float(i ^ 1));
  cudaFree(in);
  cudaFree(out);
}

TEST_CASE("emu exec: two threads writing one shared word race", "[emu][exec][defect]") {
  int* out = device_array<int>(64);
  const Outcome bad = run([&] { return shared_same_word(out, false); });
  CHECK(bad.sync == cudaErrorLaunchFailure);
  CHECK_THAT(bad.message, Catch::Contains("racecheck: Write-after-write hazard"));
  const Outcome good = run([&] { return shared_same_word(out, true); });
  CHECK(good.sync == cudaSuccess);
  CHECK(host_copy(out, 64) == std::vector<int>(64, 0));
  cudaFree(out);
}

TEST_CASE("emu exec: __syncwarp orders the accesses of one warp", "[emu][exec][defect]") {
  std::vector<int> host(32);
  for (int i = 0; i < 32; ++i) host[i] = 100 + i;
  int* in = device_copy(host);
  int* out = device_array<int>(32);
  const Outcome bad = run([&] { return warp_neighbour(in, out, false); });
  CHECK(bad.sync == cudaErrorLaunchFailure);
  CHECK_THAT(bad.message, Catch::Contains("racecheck:"));
  const Outcome good = run([&] { return warp_neighbour(in, out, true); });
  REQUIRE(good.sync == cudaSuccess);
  const std::vector<int> result = host_copy(out, 32);
  for (int i = 0; i < 32; ++i) CHECK(result[i] == 100 + (i + 1) % 32);
  cudaFree(in);
  cudaFree(out);
}

TEST_CASE("emu exec: shared memory starts undefined in every block", "[emu][exec][defect]") {
  int* out = device_array<int>(32);
  const Outcome good = run([&] { return shared_uninit_read(out, true); });
  CHECK(good.sync == cudaSuccess);
  // The same variable, written by the previous launch's block, is undefined again.
  const Outcome bad = run([&] { return shared_uninit_read(out, false); });
  CHECK(bad.sync == cudaErrorLaunchFailure);
  CHECK_THAT(bad.message, Catch::Contains("initcheck: Uninitialized __shared__ memory read"));
  cudaFree(out);
}

TEST_CASE("emu exec: more than 48 KiB of static shared memory is refused", "[emu][exec][defect]") {
  float* out = device_array<float>(1);
  const Outcome good = run([&] { return big_shared(out, false); });
  CHECK(good.sync == cudaSuccess);
  CHECK(host_copy(out, 1)[0] == 11999.0f);
  const Outcome bad = run([&] { return big_shared(out, true); });
  CHECK(bad.sync == cudaErrorInvalidValue);
  CHECK_THAT(bad.message, Catch::Contains("Too much static __shared__ memory"));
  cudaFree(out);
}

TEST_CASE("emu exec: shared atomics do not race and count exactly", "[emu][exec]") {
  const int n = 1000;
  std::vector<int> host(n);
  std::vector<int> expected(8, 0);
  for (int i = 0; i < n; ++i) {
    host[i] = (i * 37) % 101;
    ++expected[host[i] % 8];
  }
  int* in = device_copy(host);
  int* out = device_array<int>(8);
  const Outcome outcome = run([&] { return shared_atomic_histogram(in, out, n); });
  REQUIRE(outcome.sync == cudaSuccess);
  CHECK(host_copy(out, 8) == expected);
  cudaFree(in);
  cudaFree(out);
}

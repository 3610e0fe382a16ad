// Atomics under the seeded, adversarial order of threads, the order's determinism, and a
// block reduction written as sonata's kernels write theirs (shuffles, then shared memory).
#include <catch2/catch.hpp>

#include <algorithm>
#include <numeric>

#include "kernels/exec_kernels.h"
#include "test_emu_exec_support.h"

using namespace sonata::emu::test;

namespace {
std::vector<int> ticket_order(uint64_t seed, int blocks, int threads) {
  const int n = blocks * threads;
  int* counter = device_copy(std::vector<int>{0});
  unsigned long long* wide = device_copy(std::vector<unsigned long long>{0});
  float* sum = device_copy(std::vector<float>{0.0f});
  int* order = device_array<int>(n);
  sonata::emu::reset_lane_order(seed);
  REQUIRE(run([&] { return atomic_counts(counter, wide, sum, order, blocks, threads); }).sync ==
          cudaSuccess);
  CHECK(host_copy(counter, 1)[0] == n);
  CHECK(host_copy(wide, 1)[0] == (unsigned long long)n << 33);
  CHECK(host_copy(sum, 1)[0] == float(n));
  std::vector<int> tickets = host_copy(order, n);
  cudaFree(counter);
  cudaFree(wide);
  cudaFree(sum);
  cudaFree(order);
  return tickets;
}
}  // namespace

TEST_CASE("emu exec: atomicAdd is exact under the adversarial thread order", "[emu][exec]") {
  const std::vector<int> first = ticket_order(5, 3, 256);
  // Every ticket handed out once...
  std::vector<int> sorted = first;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int> all(sorted.size());
  std::iota(all.begin(), all.end(), 0);
  CHECK(sorted == all);
  // ...but not in thread order: the threads of a block run in a seeded permutation.
  CHECK(first != all);
  // The same seed gives the same order; another seed another one.
  CHECK(ticket_order(5, 3, 256) == first);
  CHECK(ticket_order(6, 3, 256) != first);
  // Blocks run in a seeded order too: for some seed, block 0 is not the first to run.
  bool block0_not_first = false;
  for (uint64_t seed = 5; seed < 12 && !block0_not_first; ++seed) {
    const std::vector<int> tickets = ticket_order(seed, 3, 256);
    block0_not_first = *std::min_element(tickets.begin(), tickets.begin() + 256) != 0;
  }
  CHECK(block0_not_first);
  sonata::emu::reset_lane_order(1);
}

TEST_CASE("emu exec: a block reduction with shuffles and shared memory is exact", "[emu][exec]") {
  const int n = 100000, blocks = 7;
  std::vector<float> host(n);
  for (int i = 0; i < n; ++i) host[i] = float(i % 64);  // sums stay exact in float
  float* in = device_copy(host);
  float* out = device_array<float>(blocks);
  const Outcome outcome = run([&] { return block_sum(in, out, n, blocks); });
  REQUIRE(outcome.sync == cudaSuccess);
  CHECK(outcome.message.empty());
  const std::vector<float> partial = host_copy(out, blocks);
  double total = 0.0;
  for (float v : partial) total += v;
  CHECK(total == std::accumulate(host.begin(), host.end(), 0.0));
  cudaFree(in);
  cudaFree(out);
}

// Memory checks of kernel code: global accesses out of bounds, to freed memory, reads of
// never-written memory; each planted defect is caught with its message, its twin passes.
#include <catch2/catch.hpp>

#include "kernels/exec_kernels.h"
#include "test_emu_exec_support.h"

using namespace sonata::emu::test;

TEST_CASE("emu exec: a kernel runs every thread of its grid", "[emu][exec]") {
  const int n = 1000;
  std::vector<float> host(n);
  for (int i = 0; i < n; ++i) host[i] = float(i);
  float* x = device_copy(host);
  const Outcome outcome = run([&] { return scale(x, n, 2.0f, dim3(3), dim3(128)); });
  REQUIRE(outcome.launch == cudaSuccess);
  REQUIRE(outcome.sync == cudaSuccess);
  const std::vector<float> result = host_copy(x, n);
  for (int i = 0; i < n; ++i) REQUIRE(result[i] == 2.0f * float(i));
  cudaFree(x);
}

TEST_CASE("emu exec: out-of-bounds global write is caught", "[emu][exec][defect]") {
  int* out = device_array<int>(100);
  const Outcome bad = run([&] { return write_index(out, 100, false, dim3(1), dim3(128)); });
  CHECK(bad.launch == cudaSuccess);
  CHECK(bad.sync == cudaErrorIllegalAddress);
  CHECK_THAT(bad.message, Catch::Contains("memcheck: Invalid __global__ write of size 4 bytes"));
  CHECK_THAT(bad.message, Catch::Contains("in kernel write_index_kernel"));
  CHECK_THAT(bad.message, Catch::Contains("in block (0,0,0)"));
  CHECK_THAT(bad.message, Catch::Contains("out of bounds"));
  const Outcome good = run([&] { return write_index(out, 100, true, dim3(1), dim3(128)); });
  CHECK(good.sync == cudaSuccess);
  CHECK(good.message.empty());
  cudaFree(out);
}

TEST_CASE("emu exec: a read of freed memory is caught", "[emu][exec][defect]") {
  float* in = device_copy(std::vector<float>(32, 1.0f));
  float* out = device_array<float>(32);
  const Outcome good = run([&] { return copy(in, out, 32); });
  CHECK(good.sync == cudaSuccess);
  cudaFree(in);
  const Outcome bad = run([&] { return copy(in, out, 32); });
  CHECK(bad.sync == cudaErrorIllegalAddress);
  CHECK_THAT(bad.message, Catch::Contains("Invalid __global__ read of size 4 bytes"));
  CHECK_THAT(bad.message, Catch::Contains("freed"));
  cudaFree(out);
}

TEST_CASE("emu exec: a read of never-written global memory is caught", "[emu][exec][defect]") {
  float* in = device_array<float>(32);
  float* out = device_array<float>(32);
  const Outcome bad = run([&] { return copy(in, out, 32); });
  CHECK(bad.sync != cudaSuccess);
  CHECK_THAT(bad.message, Catch::Contains("initcheck: Uninitialized __global__ memory read"));
  cudaMemset(in, 0, 32 * sizeof(float));
  const Outcome good = run([&] { return copy(in, out, 32); });
  CHECK(good.sync == cudaSuccess);
  cudaFree(in);
  cudaFree(out);
}

TEST_CASE("emu exec: a fault stops the rest of the grid", "[emu][exec]") {
  int* counter = device_copy(std::vector<int>{0});
  int* small = device_array<int>(4);
  const Outcome bad = run([&] { return fault_in_block_one(counter, small); });
  CHECK(bad.sync == cudaErrorIllegalAddress);
  CHECK_THAT(bad.message, Catch::Contains("by thread (0,0,0) in block ("));
  CHECK(host_copy(counter, 1)[0] == 1);  // the first block faulted, no other ran
  cudaFree(counter);
  cudaFree(small);
}

TEST_CASE("emu exec: __ldg of memory the same kernel writes is caught", "[emu][exec][defect]") {
  // The read-only data cache is for data read-only for the whole kernel; an in-place map
  // loading through it may read stale values on a card (sonata's [gpu] review, item 8).
  float* in = device_copy(std::vector<float>(256, 3.0f));
  float* out = device_array<float>(256);
  const Outcome good = run([&] { return ldg_double(in, out, false); });
  CHECK(good.sync == cudaSuccess);
  CHECK(good.message.empty());
  CHECK(host_copy(out, 256) == std::vector<float>(256, 6.0f));
  const Outcome in_place = run([&] { return ldg_double(in, in, false); });
  CHECK(in_place.sync == cudaErrorLaunchFailure);
  CHECK_THAT(in_place.message,
             Catch::Contains("ldgcheck: global write to memory this kernel loaded with __ldg"));
  CHECK_THAT(in_place.message, Catch::Contains("in kernel ldg_double_kernel"));
  // The other order: a thread's __ldg of an element another thread already wrote.
  float* shared_buffer = device_copy(std::vector<float>(256, 3.0f));
  const Outcome after_write = run([&] { return ldg_double(shared_buffer, shared_buffer, true); });
  CHECK(after_write.sync == cudaErrorLaunchFailure);
  CHECK_THAT(after_write.message, Catch::Contains("ldgcheck: "));
  const Outcome separate = run([&] { return ldg_double(in, out, true); });
  CHECK(separate.sync == cudaSuccess);
  for (float* buffer : {in, out, shared_buffer}) cudaFree(buffer);
}

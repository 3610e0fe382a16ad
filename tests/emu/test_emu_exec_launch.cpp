// Launch configurations an H100 refuses: returned at the launch (and as the last error),
// not sticky; the largest legal configurations run.
#include <catch2/catch.hpp>

#include "kernels/exec_kernels.h"
#include "test_emu_exec_support.h"

using namespace sonata::emu::test;

namespace {
cudaError_t launch_error(dim3 grid, dim3 block, size_t shared, std::string* message) {
  cudaError_t error = cudaSuccess;
  *message = capture_stderr([&] { error = empty_kernel(grid, block, shared); });
  return error;
}
}  // namespace

TEST_CASE("emu exec: more than 1024 threads per block is refused", "[emu][exec][defect]") {
  std::string message;
  CHECK(launch_error(dim3(1), dim3(1025), 0, &message) == cudaErrorInvalidConfiguration);
  CHECK_THAT(message, Catch::Contains("empty_kernel_kernel"));
  CHECK_THAT(message, Catch::Contains("1025 threads, more than 1024"));
  CHECK(cudaGetLastError() == cudaErrorInvalidConfiguration);
  CHECK(cudaGetLastError() == cudaSuccess);  // not sticky
  CHECK(launch_error(dim3(1), dim3(32, 32, 2), 0, &message) == cudaErrorInvalidConfiguration);
  cudaGetLastError();
  CHECK(run([] { return empty_kernel(dim3(1), dim3(1024), 0); }).sync == cudaSuccess);
  CHECK(run([] { return empty_kernel(dim3(1), dim3(16, 1, 64), 0); }).sync == cudaSuccess);
}

TEST_CASE("emu exec: block.z above 64 and zero extents are refused", "[emu][exec]") {
  std::string message;
  CHECK(launch_error(dim3(1), dim3(1, 1, 65), 0, &message) == cudaErrorInvalidConfiguration);
  CHECK(launch_error(dim3(0), dim3(32), 0, &message) == cudaErrorInvalidConfiguration);
  CHECK(launch_error(dim3(1), dim3(0), 0, &message) == cudaErrorInvalidConfiguration);
  cudaGetLastError();
}

TEST_CASE("emu exec: grid.y above 65535 is refused", "[emu][exec][defect]") {
  std::string message;
  CHECK(launch_error(dim3(1, 65536), dim3(1), 0, &message) == cudaErrorInvalidConfiguration);
  CHECK_THAT(message, Catch::Contains("grid (1,65536,1) exceeds"));
  CHECK(launch_error(dim3(1, 1, 65536), dim3(1), 0, &message) == cudaErrorInvalidConfiguration);
  cudaGetLastError();
  CHECK(run([] { return empty_kernel(dim3(1, 65535), dim3(1), 0); }).sync == cudaSuccess);
}

TEST_CASE("emu exec: dynamic shared memory above 48 KiB needs the opt-in", "[emu][exec][defect]") {
  std::string message;
  CHECK(launch_error(dim3(1), dim3(32), 48 * 1024 + 1, &message) == cudaErrorInvalidValue);
  CHECK_THAT(message, Catch::Contains("cudaFuncAttributeMaxDynamicSharedMemorySize"));
  cudaGetLastError();
  CHECK(cudaFuncSetAttribute(empty_kernel_address(), cudaFuncAttributeMaxDynamicSharedMemorySize,
                             100 * 1024) == cudaSuccess);
  CHECK(run([] { return empty_kernel(dim3(1), dim3(32), 64 * 1024); }).sync == cudaSuccess);
  CHECK(launch_error(dim3(1), dim3(32), 101 * 1024, &message) == cudaErrorInvalidValue);
  cudaGetLastError();
  cudaError_t over = cudaSuccess;
  capture_stderr([&] {
    over = cudaFuncSetAttribute(empty_kernel_address(), cudaFuncAttributeMaxDynamicSharedMemorySize,
                                228 * 1024);
  });
  CHECK(over == cudaErrorInvalidValue);
  cudaGetLastError();
  cudaFuncSetAttribute(empty_kernel_address(), cudaFuncAttributeMaxDynamicSharedMemorySize,
                       48 * 1024);
}

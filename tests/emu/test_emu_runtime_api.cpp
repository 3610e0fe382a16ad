// The emulated runtime's devices, errors and function attributes.
#include <catch2/catch.hpp>
#include <cstring>
#include <string>

#include "cuda_profiler_api.h"
#include "cuda_runtime_api.h"
#include "emu/runtime/function_attributes.h"

// The codes must be the real runtime's (CUDA 13.0 driver_types.h).
static_assert(cudaSuccess == 0 && cudaErrorInvalidValue == 1 && cudaErrorMemoryAllocation == 2);
static_assert(cudaErrorCudartUnloading == 4 && cudaErrorInvalidDevice == 101);
static_assert(cudaErrorDeviceUninitialized == 201 && cudaErrorInvalidResourceHandle == 400);
static_assert(cudaErrorNotReady == 600 && cudaErrorIllegalAddress == 700);
static_assert(cudaErrorLaunchFailure == 719 && cudaErrorNotPermitted == 800);
static_assert(cudaErrorUnknown == 999);
static_assert(cudaMemcpyDefault == 4 && cudaMemPoolAttrReleaseThreshold == 4);
static_assert(cudaMemPoolAttrUsedMemCurrent == 7 && cudaDevAttrL2CacheSize == 38);
static_assert(cudaDevAttrMaxSharedMemoryPerBlockOptin == 97);
static_assert(cudaFuncAttributeMaxDynamicSharedMemorySize == 8);

TEST_CASE("emu runtime: devices report an H100's properties", "[emu][runtime]") {
  int count = 0;
  REQUIRE(cudaGetDeviceCount(&count) == cudaSuccess);
  CHECK(count >= 2);
  int value = 0;
  REQUIRE(cudaDeviceGetAttribute(&value, cudaDevAttrL2CacheSize, 0) == cudaSuccess);
  CHECK(value == 50 * 1024 * 1024);
  REQUIRE(cudaDeviceGetAttribute(&value, cudaDevAttrMultiProcessorCount, 1) == cudaSuccess);
  CHECK(value == 132);
  REQUIRE(cudaDeviceGetAttribute(&value, cudaDevAttrComputeCapabilityMajor, 0) == cudaSuccess);
  CHECK(value == 9);
  REQUIRE(cudaDeviceGetAttribute(&value, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0) ==
          cudaSuccess);
  CHECK(value == 227 * 1024);
  cudaDeviceProp prop;
  REQUIRE(cudaGetDeviceProperties(&prop, 0) == cudaSuccess);
  CHECK(prop.warpSize == 32);
  CHECK(prop.maxThreadsPerBlock == 1024);
  CHECK(prop.maxGridSize[1] == 65535);
  CHECK(prop.sharedMemPerBlock == 48 * 1024);
  CHECK(cudaGetDeviceProperties(&prop, count) == cudaErrorInvalidDevice);
  CHECK(cudaGetLastError() == cudaErrorInvalidDevice);
  int least = 1, greatest = 1;
  REQUIRE(cudaDeviceGetStreamPriorityRange(&least, &greatest) == cudaSuccess);
  CHECK(least == 0);
  CHECK(greatest == -5);
  int version = 0;
  REQUIRE(cudaDriverGetVersion(&version) == cudaSuccess);
  CHECK(version >= 12000);
  REQUIRE(cudaRuntimeGetVersion(&version) == cudaSuccess);
  CHECK(version >= 12000);
}

TEST_CASE("emu runtime: each host thread selects its device", "[emu][runtime]") {
  int device = -1;
  REQUIRE(cudaSetDevice(1) == cudaSuccess);
  REQUIRE(cudaGetDevice(&device) == cudaSuccess);
  CHECK(device == 1);
  CHECK(cudaSetDevice(4096) == cudaErrorInvalidDevice);
  REQUIRE(cudaGetDevice(&device) == cudaSuccess);
  CHECK(device == 1);
  CHECK(cudaGetLastError() == cudaErrorInvalidDevice);
  REQUIRE(cudaSetDevice(0) == cudaSuccess);
}

TEST_CASE("emu runtime: cudaGetLastError resets, cudaPeekAtLastError does not", "[emu][runtime]") {
  cudaGetLastError();
  CHECK(cudaMalloc(nullptr, 16) == cudaErrorInvalidValue);
  CHECK(cudaPeekAtLastError() == cudaErrorInvalidValue);
  CHECK(cudaPeekAtLastError() == cudaErrorInvalidValue);
  CHECK(cudaGetLastError() == cudaErrorInvalidValue);
  CHECK(cudaGetLastError() == cudaSuccess);
  CHECK(cudaPeekAtLastError() == cudaSuccess);
}

TEST_CASE("emu runtime: error names and strings are the runtime's", "[emu][runtime]") {
  CHECK(std::string(cudaGetErrorName(cudaErrorNotReady)) == "cudaErrorNotReady");
  CHECK(std::string(cudaGetErrorName(cudaErrorIllegalAddress)) == "cudaErrorIllegalAddress");
  CHECK(std::string(cudaGetErrorName(cudaSuccess)) == "cudaSuccess");
  CHECK(std::string(cudaGetErrorString(cudaErrorNotReady)) == "device not ready");
  CHECK(std::string(cudaGetErrorString(cudaErrorIllegalAddress)) ==
        "an illegal memory access was encountered");
  CHECK(std::string(cudaGetErrorString(cudaErrorMemoryAllocation)) == "out of memory");
}

namespace {
void some_kernel() {}
}  // namespace

TEST_CASE("emu runtime: cudaFuncSetAttribute records the dynamic shared memory limit",
          "[emu][runtime]") {
  const void* kernel = reinterpret_cast<const void*>(&some_kernel);
  CHECK(sonata::emu::max_dynamic_shared_bytes(kernel) == 48 * 1024);
  REQUIRE(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 100 * 1024) ==
          cudaSuccess);
  CHECK(sonata::emu::max_dynamic_shared_bytes(kernel) == 100 * 1024);
  cudaFuncAttributes attributes;
  REQUIRE(cudaFuncGetAttributes(&attributes, kernel) == cudaSuccess);
  CHECK(attributes.maxDynamicSharedSizeBytes == 100 * 1024);
  CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 228 * 1024) ==
        cudaErrorInvalidValue);
  CHECK(sonata::emu::max_dynamic_shared_bytes(kernel) == 100 * 1024);
  cudaGetLastError();
}

TEST_CASE("emu runtime: the profiler calls are no-ops", "[emu][runtime]") {
  CHECK(cudaProfilerStart() == cudaSuccess);
  CHECK(cudaProfilerStop() == cudaSuccess);
}

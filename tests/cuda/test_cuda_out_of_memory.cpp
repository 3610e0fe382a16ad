// Out of device memory (engine/cuda/cuda_allocator.cpp, kernels/cuda/device_pool.h): memory
// the pool keeps cached serves a plain cudaMalloc after the retry trims it, an allocation
// larger than the device fails with one message naming the size, the pool and the device,
// and the failure leaves no error behind for the next kernel.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "base/error.h"
#include "engine/ops.h"

#if SONATA_WITH_CUDA
#include <cuda_runtime_api.h>

#include "kernels/cuda/device_pool.h"
#endif

using namespace sonata;

#if SONATA_WITH_CUDA
TEST_CASE("an allocation larger than the device names the size, the pool and the device",
          "[cuda][memory]") {
  size_t free = 0, total = 0;
  REQUIRE(cudaMemGetInfo(&free, &total) == cudaSuccess);
  const int64_t too_many = int64_t(total / sizeof(float)) * 2;
  std::string message;
  try {
    (void)empty({too_many}, TensorOptions{}.with(Device::cuda()));
  } catch (const Error& error) {
    message = error.what();
  }
  CHECK(message.find("CUDA out of memory on cuda:0 allocating") != std::string::npos);
  CHECK(message.find("for a tensor") != std::string::npos);
  CHECK(message.find("the pool holds") != std::string::npos);
  // Neither the failure nor the retry left an error for the next kernel's launch check.
  const Tensor small = add(ones({16}, TensorOptions{}.with(Device::cuda())), 1.0);
  CHECK(small.to(Device::cpu()).to_vector<float>()[0] == 2.0f);
}

TEST_CASE("memory the pool keeps cached serves a later plain cudaMalloc after a trim",
          "[cuda][memory]") {
  // Fill most of the device through the pool, free it (the pool keeps it cached, up to its
  // threshold), then ask cudaMalloc for more than the driver has left: allocate_retrying
  // trims the pool and the retry succeeds.
  size_t free = 0, total = 0;
  REQUIRE(cudaMemGetInfo(&free, &total) == cudaSuccess);
  const size_t chunk = size_t(256) << 20;
  {
    std::vector<Tensor> held;
    size_t taken = 0;
    while (taken + 2 * chunk < free) {
      held.push_back(empty({int64_t(chunk)}, TensorOptions{}.with(DType::u8).with(Device::cuda())));
      taken += chunk;
    }
  }
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  size_t left = 0;
  REQUIRE(cudaMemGetInfo(&left, &total) == cudaSuccess);
  const size_t want = left + chunk;  // more than the driver has without the pool's cache
  void* block = nullptr;
  kernels::cuda::allocate_retrying("a test buffer", want, 0,
                                   [&] { return cudaMalloc(&block, want); });
  CHECK(block != nullptr);
  CHECK(cudaFree(block) == cudaSuccess);
}
#endif

// Threads the project starts run their CUDA calls on their rank's device (engine/
// device_thread.h): a thread that never selected one would open a context on GPU 0 (on a
// card, silently; under the emulator the call is refused once another thread chose a device
// other than 0). The watchdog's thread and the loader's workers start this way; the CPU
// tests check that they do (tests/core/test_thread_starts.cpp, tests/comm/test_watchdog.cpp).
#include <catch2/catch.hpp>

#include <exception>
#include <string>

#include "engine/device.h"
#include "engine/device_guard.h"
#include "engine/device_thread.h"
#include "engine/ops.h"

#if SONATA_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

using namespace sonata;

TEST_CASE("a started thread queries events and drops tensors on its own device", "[cuda][device]") {
#if SONATA_WITH_CUDA
  if (cuda_device_count() < 2) {
    WARN("needs two devices (the emulator has 8); skipped with " << cuda_device_count());
    return;
  }
  const Device rank_device = Device::cuda(1);
  set_cuda_device(1);  // as a rank of local rank 1 does before anything else
  Tensor made = ones({1024}, TensorOptions{}.with(rank_device));
  cudaEvent_t event = nullptr;
  REQUIRE(cudaEventCreateWithFlags(&event, cudaEventDisableTiming) == cudaSuccess);
  REQUIRE(cudaEventRecord(event, nullptr) == cudaSuccess);
  std::string failure;
  int device_seen = -1;
  std::thread thread = start_device_thread(rank_device, [&](std::exception_ptr no_device) {
    try {
      if (no_device) std::rethrow_exception(no_device);
      // What the watchdog does: poll an event of the rank's device, then drop the last
      // reference to device memory (a free on the device).
      cudaError_t status = cudaErrorNotReady;
      while (status == cudaErrorNotReady) status = cudaEventQuery(event);
      if (status != cudaSuccess) failure = cudaGetErrorString(status);
      (void)cudaGetLastError();
      if (cudaGetDevice(&device_seen) != cudaSuccess) failure = "cudaGetDevice failed";
      made = Tensor();
    } catch (const std::exception& error) {
      failure = error.what();
    }
  });
  thread.join();
  CHECK(failure.empty());
  CHECK(device_seen == 1);
  CHECK(cudaEventDestroy(event) == cudaSuccess);
  set_cuda_device(0);
#endif
}

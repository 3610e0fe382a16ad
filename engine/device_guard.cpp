#include "engine/device_guard.h"

#include <atomic>
#include <cstdio>
#include <exception>

#include "base/error.h"

#if SONATA_WITH_CUDA
#include <cuda_runtime_api.h>

#include "base/cuda_check.h"
#endif

namespace sonata {

namespace {

void select_with_runtime(int index) {
#if SONATA_WITH_CUDA
  CUDA_CHECK(cudaSetDevice(index));
#else
  throw Error(str("cannot select cuda:", index, ": ", cuda_unavailable_reason()));
#endif
}

std::atomic<SelectCudaDevice> g_select{select_with_runtime};
// What this thread selected last; saves a runtime call when the device is already current.
thread_local int t_current_device = -1;

}  // namespace

SelectCudaDevice replace_select_cuda_device(SelectCudaDevice select) {
  return g_select.exchange(select ? select : select_with_runtime);
}

int current_cuda_device() {
  return t_current_device;
}

void set_cuda_device(int index) {
  SONATA_CHECK(index >= 0, "CUDA device index ", index, " is negative");
  if (t_current_device == index) return;
  g_select.load()(index);
  t_current_device = index;
}

CudaDeviceGuard::CudaDeviceGuard(Device device) {
  if (!device.is_cuda()) return;
  previous_ = t_current_device;
  set_cuda_device(device.index);
  active_ = true;
}

CudaDeviceGuard::~CudaDeviceGuard() {
  if (!active_) return;
  if (previous_ < 0) {
    // Nothing was selected before: leave the device as it is, but stop vouching for it.
    t_current_device = -1;
    return;
  }
  try {
    set_cuda_device(previous_);
  } catch (const std::exception& failure) {
    // A destructor may not throw; the next set_cuda_device selects again.
    t_current_device = -1;
    std::fprintf(stderr, "sonata: restoring cuda:%d failed: %s\n", previous_, failure.what());
  }
}

}  // namespace sonata

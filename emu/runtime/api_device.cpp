// Device entry points: count, selection per host thread, properties, attributes,
// synchronisation, versions.
#include "cuda_runtime_api.h"
#include "emu/runtime/allocator.h"
#include "emu/runtime/api_guard.h"
#include "emu/runtime/memory_arena.h"

using namespace sonata::emu;

namespace {

// Waits for all work of `device`; the pools then trim to their release thresholds, as the
// real pool does at a synchronisation.
cudaError_t synchronize_device(int device) {
  if (!run_until(device_tails(device))) return cudaErrorUnknown;
  trim_pools_to_threshold();
  return sticky_error(device);
}

}  // namespace

extern "C" {

cudaError_t cudaGetDeviceCount(int* count) {
  if (!count) return record_error(cudaErrorInvalidValue);
  *count = device_count();
  return cudaSuccess;
}

cudaError_t cudaSetDevice(int device) {
  return api_call(
      "cudaSetDevice",
      [&] {
        if (!valid_device(device)) {
          return refuse("cudaSetDevice", cudaErrorInvalidDevice,
                        "device " + std::to_string(device) + " is not in 0.." +
                            std::to_string(device_count() - 1));
        }
        select_device(device);
        return cudaSuccess;
      },
      Context::not_needed);
}

cudaError_t cudaGetDevice(int* device) {
  if (!device) return record_error(cudaErrorInvalidValue);
  *device = thread_device();
  return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  if (!prop) return record_error(cudaErrorInvalidValue);
  if (!valid_device(device)) return record_error(cudaErrorInvalidDevice);
  *prop = device_properties(device);
  return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device) {
  if (!value) return record_error(cudaErrorInvalidValue);
  if (!valid_device(device)) return record_error(cudaErrorInvalidDevice);
  if (!device_attribute(device, attr, value)) {
    return record_error(refuse("cudaDeviceGetAttribute", cudaErrorInvalidValue,
                               "attribute " + std::to_string(static_cast<int>(attr)) +
                                   " is not emulated (add it to emu/runtime/device_table.cpp)"));
  }
  return cudaSuccess;
}

cudaError_t cudaDeviceGetStreamPriorityRange(int* leastPriority, int* greatestPriority) {
  return api_call("cudaDeviceGetStreamPriorityRange", [&] {
    if (leastPriority) *leastPriority = 0;
    if (greatestPriority) *greatestPriority = -5;
    return cudaSuccess;
  });
}

cudaError_t cudaDeviceSynchronize(void) {
  return api_call("cudaDeviceSynchronize", [&] { return synchronize_device(current_device()); });
}

cudaError_t cudaDeviceReset(void) {
  return api_call("cudaDeviceReset", [&] {
    const int device = current_device();
    synchronize_device(device);  // a poisoned device's work is dropped, not run
    clear_sticky_error(device);
    return cudaSuccess;
  });
}

cudaError_t cudaDriverGetVersion(int* driverVersion) {
  if (!driverVersion) return record_error(cudaErrorInvalidValue);
  *driverVersion = CUDART_VERSION;
  return cudaSuccess;
}

cudaError_t cudaRuntimeGetVersion(int* runtimeVersion) {
  if (!runtimeVersion) return record_error(cudaErrorInvalidValue);
  *runtimeVersion = CUDART_VERSION;
  return cudaSuccess;
}

cudaError_t cudaMemGetInfo(size_t* free, size_t* total) {
  return api_call("cudaMemGetInfo", [&] {
    const int device = current_device();
    const size_t capacity = device_properties(device).totalGlobalMem;
    if (total) *total = capacity;
    if (free) *free = capacity - device_bytes_in_use(device);
    return sticky_error(device);
  });
}

cudaError_t cudaDeviceCanAccessPeer(int* canAccessPeer, int device, int peerDevice) {
  if (!canAccessPeer) return record_error(cudaErrorInvalidValue);
  if (!valid_device(device) || !valid_device(peerDevice)) {
    return record_error(cudaErrorInvalidDevice);
  }
  *canAccessPeer = device != peerDevice ? 1 : 0;
  return cudaSuccess;
}

cudaError_t cudaDeviceEnablePeerAccess(int peerDevice, unsigned int flags) {
  return api_call("cudaDeviceEnablePeerAccess", [&] {
    const int device = current_device();
    if (flags != 0) return cudaErrorInvalidValue;
    if (!valid_device(peerDevice) || peerDevice == device) return cudaErrorInvalidDevice;
    return cudaSuccess;
  });
}

}  // extern "C"

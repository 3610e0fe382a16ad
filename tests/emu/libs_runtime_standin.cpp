// STAND-IN for the emulated runtime, linked into the emu-libs tests only while the
// emu-runtime branch's sonata_emu_runtime does not exist: work runs at once on the
// enqueuing thread after its ranges are checked against a plain list of allocations;
// streams know their device; each host thread has a current device. Removed when the real
// runtime lands (emu/libs/CMakeLists.txt links it instead automatically).
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>

#include "emu/runtime/device_work.h"

struct CUstream_st {
  int device = 0;
};

namespace {

constexpr int kDevices = 8;

struct Allocation {
  size_t bytes = 0;
  int device = 0;
  bool live = true;
};

std::mutex mutex;
std::map<uintptr_t, Allocation> allocations;
cudaError_t sticky[kDevices] = {};
thread_local int current = 0;
thread_local cudaError_t last_error = cudaSuccess;

// Empty when [p, p + bytes) lies in one live allocation, else why not.
std::string check_range(const void* p, size_t bytes, const char* kind) {
  const auto address = reinterpret_cast<uintptr_t>(p);
  const std::lock_guard<std::mutex> lock(mutex);
  auto at = allocations.upper_bound(address);
  if (at != allocations.begin()) {
    --at;
    const uintptr_t base = at->first;
    if (address < base + at->second.bytes) {
      if (!at->second.live)
        return std::string(kind) + " of " + std::to_string(bytes) + " bytes at offset " +
               std::to_string(address - base) + " of a freed allocation of " +
               std::to_string(at->second.bytes) + " bytes";
      if (address + bytes > base + at->second.bytes)
        return std::string(kind) + " of " + std::to_string(bytes) + " bytes at offset " +
               std::to_string(address - base) + " runs past the end of an allocation of " +
               std::to_string(at->second.bytes) + " bytes on device " +
               std::to_string(at->second.device);
      return "";
    }
  }
  return std::string(kind) + " of " + std::to_string(bytes) + " bytes outside every allocation";
}

}  // namespace

namespace sonata::emu {

cudaError_t enqueue(cudaStream_t stream, Work work) {
  const int device = stream_device(stream);
  if (sticky[device] != cudaSuccess) return sticky[device];
  for (const MemRange& r : work.reads)
    if (r.bytes > 0)
      if (const std::string why = check_range(r.data, r.bytes, "read"); !why.empty()) {
        report_device_fault(cudaErrorIllegalAddress, work.name + ": " + why);
        return cudaSuccess;  // a fault inside work shows at the next synchronisation
      }
  for (const MemRange& r : work.writes)
    if (r.bytes > 0)
      if (const std::string why = check_range(r.data, r.bytes, "write"); !why.empty()) {
        report_device_fault(cudaErrorIllegalAddress, work.name + ": " + why);
        return cudaSuccess;
      }
  // The work runs on the device of its stream.
  const int saved = current;
  current = device;
  work.run();
  current = saved;
  return cudaSuccess;
}

int stream_device(cudaStream_t stream) {
  if (stream == nullptr || stream == cudaStreamLegacy || stream == cudaStreamPerThread)
    return current;
  return stream->device;
}

int current_device() {
  return current;
}

void report_device_fault(cudaError_t error, const std::string& message) {
  std::fprintf(stderr, "[emu stand-in runtime] device fault: %s\n", message.c_str());
  sticky[current] = error;
}

}  // namespace sonata::emu

cudaError_t cudaMalloc(void** p, size_t bytes) {
  void* memory = std::aligned_alloc(256, (bytes + 255) / 256 * 256 + 256);
  if (!memory) return cudaErrorMemoryAllocation;
  *p = memory;
  const std::lock_guard<std::mutex> lock(mutex);
  allocations[reinterpret_cast<uintptr_t>(memory)] = {bytes, current, true};
  return cudaSuccess;
}

cudaError_t cudaFree(void* p) {
  if (!p) return cudaSuccess;
  const std::lock_guard<std::mutex> lock(mutex);
  const auto at = allocations.find(reinterpret_cast<uintptr_t>(p));
  if (at == allocations.end() || !at->second.live) return cudaErrorInvalidValue;
  at->second.live = false;  // kept (never reused), so later work on it shows as freed
  return cudaSuccess;
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t count, cudaMemcpyKind) {
  if (sticky[current] != cudaSuccess) return sticky[current];
  std::memcpy(dst, src, count);
  return cudaSuccess;
}

cudaError_t cudaMemset(void* p, int value, size_t count) {
  std::memset(p, value, count);
  return cudaSuccess;
}

cudaError_t cudaStreamCreate(cudaStream_t* stream) {
  *stream = new CUstream_st{current};
  return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  delete stream;
  return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  return sticky[sonata::emu::stream_device(stream)];
}

cudaError_t cudaDeviceSynchronize(void) {
  return sticky[current];
}

cudaError_t cudaGetDevice(int* device) {
  *device = current;
  return cudaSuccess;
}

cudaError_t cudaSetDevice(int device) {
  if (device < 0 || device >= kDevices) return last_error = cudaErrorInvalidDevice;
  current = device;
  return cudaSuccess;
}

cudaError_t cudaGetDeviceCount(int* count) {
  *count = kDevices;
  return cudaSuccess;
}

cudaError_t cudaGetLastError(void) {
  const cudaError_t error = last_error;
  last_error = cudaSuccess;
  return error;
}

const char* cudaGetErrorString(cudaError_t error) {
  switch (error) {
    case cudaSuccess:
      return "no error";
    case cudaErrorIllegalAddress:
      return "an illegal memory access was encountered";
    default:
      return "CUDA error";
  }
}

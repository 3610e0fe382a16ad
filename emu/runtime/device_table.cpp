#include "emu/runtime/device_table.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "emu/runtime/device_work.h"
#include "emu/runtime/error_names.h"
#include "emu/runtime/error_state.h"
#include "emu/runtime/exec_lock.h"

namespace sonata::emu {

namespace {

int read_device_count() {
  const char* text = std::getenv("SONATA_EMU_DEVICES");
  if (!text || !*text) return 8;
  char* end = nullptr;
  const long count = std::strtol(text, &end, 10);
  if (*end != '\0' || count < 1 || count > 64) {
    std::fprintf(stderr, "sonata emu: SONATA_EMU_DEVICES=\"%s\" is not a count in 1..64; using 8\n",
                 text);
    return 8;
  }
  return static_cast<int>(count);
}

cudaDeviceProp h100_properties(int index) {
  cudaDeviceProp p;
  std::memset(&p, 0, sizeof p);
  std::snprintf(p.name, sizeof p.name, "NVIDIA H100 80GB HBM3 (sonata emulated)");
  p.uuid.bytes[0] = static_cast<char>(index);
  p.totalGlobalMem = size_t{80} << 30;
  p.sharedMemPerBlock = 48 * 1024;
  p.regsPerBlock = 65536;
  p.warpSize = 32;
  p.memPitch = 2147483647;
  p.maxThreadsPerBlock = 1024;
  p.maxThreadsDim[0] = 1024;
  p.maxThreadsDim[1] = 1024;
  p.maxThreadsDim[2] = 64;
  p.maxGridSize[0] = 2147483647;
  p.maxGridSize[1] = 65535;
  p.maxGridSize[2] = 65535;
  p.totalConstMem = 65536;
  p.major = 9;
  p.minor = 0;
  p.textureAlignment = 512;
  p.multiProcessorCount = 132;
  p.canMapHostMemory = 1;
  p.concurrentKernels = 1;
  p.ECCEnabled = 1;
  p.pciBusID = 0x18 + index;
  p.asyncEngineCount = 3;
  p.unifiedAddressing = 1;
  p.memoryBusWidth = 5120;
  p.l2CacheSize = 50 * 1024 * 1024;
  p.persistingL2CacheMaxSize = 30 * 1024 * 1024;
  p.maxThreadsPerMultiProcessor = 2048;
  p.streamPrioritiesSupported = 1;
  p.sharedMemPerMultiprocessor = 228 * 1024;
  p.regsPerMultiprocessor = 65536;
  p.managedMemory = 1;
  p.cooperativeLaunch = 1;
  p.sharedMemPerBlockOptin = 227 * 1024;
  p.maxBlocksPerMultiProcessor = 32;
  p.reservedSharedMemPerBlock = 1024;
  p.memoryPoolsSupported = 1;
  p.clusterLaunch = 1;
  return p;
}

struct DeviceState {
  cudaDeviceProp properties;
  cudaError_t sticky = cudaSuccess;
};

std::vector<DeviceState>& devices() {
  static auto* table = [] {
    auto* states = new std::vector<DeviceState>(read_device_count());
    for (size_t i = 0; i < states->size(); ++i) {
      (*states)[i].properties = h100_properties(static_cast<int>(i));
    }
    return states;
  }();
  return *table;
}

// The selection rule's memory: which device this thread chose, whether it chose at all,
// and the first device other than 0 any thread chose (-1: none).
thread_local int t_device = 0;
thread_local bool t_selected = false;
thread_local unsigned t_selection_epoch = 0;
std::atomic<int> g_nonzero_selected{-1};
std::atomic<unsigned> g_epoch{1};

void refresh_thread_epoch() {
  const unsigned epoch = g_epoch.load();
  if (t_selection_epoch != epoch) {
    t_selection_epoch = epoch;
    t_device = 0;
    t_selected = false;
  }
}

}  // namespace

int device_count() {
  return static_cast<int>(devices().size());
}

bool valid_device(int device) {
  return device >= 0 && device < device_count();
}

const cudaDeviceProp& device_properties(int device) {
  return devices().at(static_cast<size_t>(device)).properties;
}

bool device_attribute(int device, cudaDeviceAttr attr, int* value) {
  const cudaDeviceProp& p = device_properties(device);
  switch (attr) {
    case cudaDevAttrMaxThreadsPerBlock:
      *value = p.maxThreadsPerBlock;
      return true;
    case cudaDevAttrMaxBlockDimX:
      *value = p.maxThreadsDim[0];
      return true;
    case cudaDevAttrMaxBlockDimY:
      *value = p.maxThreadsDim[1];
      return true;
    case cudaDevAttrMaxBlockDimZ:
      *value = p.maxThreadsDim[2];
      return true;
    case cudaDevAttrMaxGridDimX:
      *value = p.maxGridSize[0];
      return true;
    case cudaDevAttrMaxGridDimY:
      *value = p.maxGridSize[1];
      return true;
    case cudaDevAttrMaxGridDimZ:
      *value = p.maxGridSize[2];
      return true;
    case cudaDevAttrMaxSharedMemoryPerBlock:
      *value = static_cast<int>(p.sharedMemPerBlock);
      return true;
    case cudaDevAttrTotalConstantMemory:
      *value = static_cast<int>(p.totalConstMem);
      return true;
    case cudaDevAttrWarpSize:
      *value = p.warpSize;
      return true;
    case cudaDevAttrMaxRegistersPerBlock:
      *value = p.regsPerBlock;
      return true;
    case cudaDevAttrClockRate:
      *value = 1980000;
      return true;
    case cudaDevAttrMultiProcessorCount:
      *value = p.multiProcessorCount;
      return true;
    case cudaDevAttrIntegrated:
      *value = 0;
      return true;
    case cudaDevAttrCanMapHostMemory:
      *value = p.canMapHostMemory;
      return true;
    case cudaDevAttrConcurrentKernels:
      *value = p.concurrentKernels;
      return true;
    case cudaDevAttrEccEnabled:
      *value = p.ECCEnabled;
      return true;
    case cudaDevAttrPciBusId:
      *value = p.pciBusID;
      return true;
    case cudaDevAttrPciDeviceId:
      *value = p.pciDeviceID;
      return true;
    case cudaDevAttrPciDomainId:
      *value = p.pciDomainID;
      return true;
    case cudaDevAttrGlobalMemoryBusWidth:
      *value = p.memoryBusWidth;
      return true;
    case cudaDevAttrL2CacheSize:
      *value = p.l2CacheSize;
      return true;
    case cudaDevAttrMaxThreadsPerMultiProcessor:
      *value = p.maxThreadsPerMultiProcessor;
      return true;
    case cudaDevAttrAsyncEngineCount:
      *value = p.asyncEngineCount;
      return true;
    case cudaDevAttrUnifiedAddressing:
      *value = p.unifiedAddressing;
      return true;
    case cudaDevAttrComputeCapabilityMajor:
      *value = p.major;
      return true;
    case cudaDevAttrComputeCapabilityMinor:
      *value = p.minor;
      return true;
    case cudaDevAttrStreamPrioritiesSupported:
      *value = p.streamPrioritiesSupported;
      return true;
    case cudaDevAttrMaxSharedMemoryPerMultiprocessor:
      *value = static_cast<int>(p.sharedMemPerMultiprocessor);
      return true;
    case cudaDevAttrMaxRegistersPerMultiprocessor:
      *value = p.regsPerMultiprocessor;
      return true;
    case cudaDevAttrManagedMemory:
      *value = p.managedMemory;
      return true;
    case cudaDevAttrCooperativeLaunch:
      *value = p.cooperativeLaunch;
      return true;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin:
      *value = static_cast<int>(p.sharedMemPerBlockOptin);
      return true;
    case cudaDevAttrMaxBlocksPerMultiprocessor:
      *value = p.maxBlocksPerMultiProcessor;
      return true;
    case cudaDevAttrMaxPersistingL2CacheSize:
      *value = p.persistingL2CacheMaxSize;
      return true;
    case cudaDevAttrReservedSharedMemoryPerBlock:
      *value = static_cast<int>(p.reservedSharedMemPerBlock);
      return true;
    case cudaDevAttrMemoryPoolsSupported:
      *value = p.memoryPoolsSupported;
      return true;
    case cudaDevAttrClusterLaunch:
      *value = p.clusterLaunch;
      return true;
    default:
      return false;
  }
}

void select_device(int device) {
  refresh_thread_epoch();
  t_device = device;
  t_selected = true;
  if (device != 0) {
    int none = -1;
    g_nonzero_selected.compare_exchange_strong(none, device);
  }
}

int thread_device() {
  refresh_thread_epoch();
  return t_device;
}

int current_device() {
  refresh_thread_epoch();
  const int other = g_nonzero_selected.load();
  if (!t_selected && other >= 0) {
    throw UsageError(thread_label() +
                     " never called cudaSetDevice, in a process in which a thread " +
                     "selected device " + std::to_string(other) +
                     ": on a GPU this call silently opens a context on device 0");
  }
  return t_device;
}

cudaError_t sticky_error(int device) {
  if (!valid_device(device)) return cudaSuccess;
  ExecLock lock;
  return devices()[static_cast<size_t>(device)].sticky;
}

void set_sticky_error(int device, cudaError_t error, const std::string& message) {
  ExecLock lock;
  DeviceState& state = devices().at(static_cast<size_t>(device));
  if (state.sticky != cudaSuccess) return;
  state.sticky = error;
  std::fprintf(stderr, "sonata emu: device %d: %s (%s) -- sticky: every later call on it fails\n",
               device, message.c_str(), error_name(error) ? error_name(error) : "?");
}

void clear_sticky_error(int device) {
  ExecLock lock;
  devices().at(static_cast<size_t>(device)).sticky = cudaSuccess;
}

void forget_device_selections() {
  g_nonzero_selected = -1;
  g_epoch.fetch_add(1);
}

}  // namespace sonata::emu

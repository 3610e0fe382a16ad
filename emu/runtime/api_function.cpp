// cudaFuncSetAttribute / cudaFuncGetAttributes: per-kernel attributes, keyed by address.
#include <unordered_map>

#include "cuda_runtime_api.h"
#include "emu/runtime/api_guard.h"
#include "emu/runtime/function_attributes.h"

using namespace sonata::emu;

namespace {

constexpr int kDefaultDynamicShared = 48 * 1024;

struct KernelAttributes {
  int max_dynamic_shared = kDefaultDynamicShared;
  int carveout = -1;
};

std::unordered_map<const void*, KernelAttributes>& kernel_attributes() {
  static auto* table = new std::unordered_map<const void*, KernelAttributes>;
  return *table;
}

}  // namespace

namespace sonata::emu {

int max_dynamic_shared_bytes(const void* kernel) {
  ExecLock lock;
  auto it = kernel_attributes().find(kernel);
  return it == kernel_attributes().end() ? kDefaultDynamicShared : it->second.max_dynamic_shared;
}

}  // namespace sonata::emu

extern "C" {

cudaError_t cudaFuncSetAttribute(const void* func, cudaFuncAttribute attr, int value) {
  return api_call("cudaFuncSetAttribute", [&] {
    if (!func) return cudaErrorInvalidDeviceFunction;
    const int optin = static_cast<int>(device_properties(thread_device()).sharedMemPerBlockOptin);
    switch (attr) {
      case cudaFuncAttributeMaxDynamicSharedMemorySize:
        if (value < 0 || value > optin) {
          return refuse("cudaFuncSetAttribute", cudaErrorInvalidValue,
                        "cudaFuncAttributeMaxDynamicSharedMemorySize " + std::to_string(value) +
                            " is over the device's opt-in limit " + std::to_string(optin));
        }
        kernel_attributes()[func].max_dynamic_shared = value;
        return cudaSuccess;
      case cudaFuncAttributePreferredSharedMemoryCarveout:
        if (value < -1 || value > 100) return cudaErrorInvalidValue;
        kernel_attributes()[func].carveout = value;
        return cudaSuccess;
      default:
        return cudaErrorInvalidValue;
    }
  });
}

cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* attr, const void* func) {
  return api_call("cudaFuncGetAttributes", [&] {
    if (!attr) return cudaErrorInvalidValue;
    if (!func) return cudaErrorInvalidDeviceFunction;
    *attr = cudaFuncAttributes{};
    const auto it = kernel_attributes().find(func);
    const KernelAttributes kernel =
        it == kernel_attributes().end() ? KernelAttributes{} : it->second;
    attr->maxThreadsPerBlock = 1024;
    attr->ptxVersion = 90;
    attr->binaryVersion = 90;
    attr->maxDynamicSharedSizeBytes = kernel.max_dynamic_shared;
    attr->preferredShmemCarveout = kernel.carveout;
    return cudaSuccess;
  });
}

}  // extern "C"

#pragma once
// What every emulated runtime entry point does around its body: refuse a call from inside
// a host function (cudaErrorNotPermitted, as documented for cudaLaunchHostFunc), take the
// execution lock, apply the device-selection rule (any call that needs a context -- on a
// card it opens one on device 0 for a thread that never selected a device, even a
// cudaEventQuery on another device's event), turn its UsageError into
// cudaErrorDeviceUninitialized with a message naming the call, and record a failure as the
// thread's last error. Calls that need no context (cudaGetDevice, cudaGetDeviceCount,
// properties, attributes, errors, versions) do not go through here; cudaSetDevice does,
// without the rule.
#include <cstdio>

#include "driver_types.h"
#include "emu/runtime/device_table.h"
#include "emu/runtime/error_state.h"
#include "emu/runtime/exec_lock.h"
#include "emu/runtime/profile.h"
#include "emu/runtime/scheduler.h"

namespace sonata::emu {

enum class Context { needed, not_needed };

template <class Body>
cudaError_t api_call(const char* name, Body&& body, Context context = Context::needed) {
  if (in_host_function()) {
    std::fprintf(stderr,
                 "sonata emu: %s called inside a host function (cudaLaunchHostFunc): host "
                 "functions must not make CUDA calls\n",
                 name);
    return cudaErrorNotPermitted;
  }
  ExecLock lock;
  const char* outer_call = profile::t_api_call;
  profile::t_api_call = name;
  cudaError_t result = cudaSuccess;
  try {
    if (context == Context::needed) current_device();
    result = body();
  } catch (const UsageError& refusal) {
    std::fprintf(stderr, "sonata emu: %s refused: %s\n", name, refusal.what());
    result = cudaErrorDeviceUninitialized;
  }
  profile::t_api_call = outer_call;
  return record_error(result);
}

// A usage error the emulator names on stderr (a card returns the same code silently).
inline cudaError_t refuse(const char* call, cudaError_t error, const std::string& why) {
  std::fprintf(stderr, "sonata emu: %s: %s\n", call, why.c_str());
  return error;
}

}  // namespace sonata::emu

// The runtime's error entry points. cudaGetLastError returns and clears the calling
// thread's last error (a sticky error of its device is returned and stays); peeking leaves
// it. A query's cudaErrorNotReady is recorded like any other error, so a caller that does
// not clear it sees it at its next cudaGetLastError.
#include "cuda_runtime_api.h"
#include "emu/runtime/device_table.h"
#include "emu/runtime/error_names.h"
#include "emu/runtime/error_state.h"
#include "emu/runtime/exec_lock.h"

using namespace sonata::emu;

extern "C" {

cudaError_t cudaGetLastError(void) {
  const cudaError_t last = last_error(/*reset=*/true);
  const cudaError_t sticky = sticky_error(thread_device());
  return sticky != cudaSuccess ? sticky : last;
}

cudaError_t cudaPeekAtLastError(void) {
  const cudaError_t last = last_error(/*reset=*/false);
  const cudaError_t sticky = sticky_error(thread_device());
  return sticky != cudaSuccess ? sticky : last;
}

const char* cudaGetErrorString(cudaError_t error) {
  return error_description(error);
}

const char* cudaGetErrorName(cudaError_t error) {
  const char* name = error_name(error);
  return name ? name : "unrecognized error code";
}

cudaError_t cudaProfilerStart(void) {
  return cudaSuccess;
}

cudaError_t cudaProfilerStop(void) {
  return cudaSuccess;
}

}  // extern "C"

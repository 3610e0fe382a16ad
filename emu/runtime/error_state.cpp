#include "emu/runtime/error_state.h"

#include <pthread.h>

#include <sstream>
#include <string>
#include <thread>

namespace sonata::emu {

namespace {
thread_local cudaError_t t_last_error = cudaSuccess;
}  // namespace

cudaError_t record_error(cudaError_t error) {
  if (error != cudaSuccess) t_last_error = error;
  return error;
}

cudaError_t last_error(bool reset) {
  const cudaError_t error = t_last_error;
  if (reset) t_last_error = cudaSuccess;
  return error;
}

std::string thread_label() {
  std::ostringstream label;
  label << "thread " << std::this_thread::get_id();
  char name[64] = {};
  if (pthread_getname_np(pthread_self(), name, sizeof name) == 0 && name[0] != '\0') {
    label << " (\"" << name << "\")";
  }
  return label.str();
}

}  // namespace sonata::emu

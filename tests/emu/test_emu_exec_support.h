#pragma once
// Helpers of the executor's self-tests: device buffers, stderr capture, and a fault check
// that clears the sticky error afterwards.
#include <cuda_runtime_api.h>

#include <unistd.h>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

namespace sonata::emu::test {

// Runs `body` with stderr going to a temporary file; returns what was written.
inline std::string capture_stderr(const std::function<void()>& body) {
  std::fflush(stderr);
  FILE* file = std::tmpfile();
  const int saved = dup(2);
  dup2(fileno(file), 2);
  body();
  std::fflush(stderr);
  dup2(saved, 2);
  close(saved);
  std::string text;
  std::rewind(file);
  char buffer[4096];
  for (size_t n; (n = std::fread(buffer, 1, sizeof buffer, file)) > 0;) text.append(buffer, n);
  std::fclose(file);
  return text;
}

template <typename T>
T* device_array(size_t n) {
  void* p = nullptr;
  cudaMalloc(&p, n * sizeof(T));
  return static_cast<T*>(p);
}

template <typename T>
T* device_copy(const std::vector<T>& host) {
  T* p = device_array<T>(host.size());
  cudaMemcpy(p, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice);
  return p;
}

template <typename T>
std::vector<T> host_copy(const T* device, size_t n) {
  std::vector<T> host(n);
  cudaMemcpy(host.data(), device, n * sizeof(T), cudaMemcpyDeviceToHost);
  return host;
}

// The result of running a launch to completion: launch error, sticky error, stderr.
struct Outcome {
  cudaError_t launch = cudaSuccess;
  cudaError_t sync = cudaSuccess;
  std::string message;
};

// Launches, synchronises, and resets the device when it faulted (the error is sticky).
inline Outcome run(const std::function<cudaError_t()>& launch) {
  Outcome outcome;
  outcome.message = capture_stderr([&] {
    outcome.launch = launch();
    outcome.sync = cudaDeviceSynchronize();
  });
  if (outcome.sync != cudaSuccess) cudaDeviceReset();
  cudaGetLastError();
  return outcome;
}

}  // namespace sonata::emu::test

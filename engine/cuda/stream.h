#pragma once
// CUDA streams and events, RAII. Each device has a current stream per thread (by default one
// non-blocking compute stream per device, shared by all threads); every op launches on it.
#include <cuda_runtime_api.h>

#include "engine/device_guard.h"  // set_cuda_device, CudaDeviceGuard

namespace sonata {

class Stream {
 public:
  // A new non-blocking stream on `device`, with an optional priority (lower is higher).
  explicit Stream(int device, int priority = 0);
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return stream_; }
  int device() const { return device_; }

 private:
  cudaStream_t stream_ = nullptr;
  int device_;
};

// Created on the calling thread's device; recorded only on streams of that device.
class Event {
 public:
  explicit Event(bool timing = false);
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  void record(cudaStream_t stream);
  // Makes `stream` wait for this event on the device, without blocking the host.
  void block(cudaStream_t stream) const;
  bool query() const;  // true once the recorded work is done (never leaves an error behind)
  void synchronize() const;
  float elapsed_ms(const Event& since) const;
  cudaEvent_t get() const { return event_; }

 private:
  cudaEvent_t event_ = nullptr;
};

// The calling thread's current stream on `device`; also makes `device` the thread's device.
cudaStream_t current_stream(int device);
// Replaces the calling thread's current stream for the stream's device until destroyed.
class StreamGuard {
 public:
  explicit StreamGuard(const Stream& stream);
  ~StreamGuard();
  StreamGuard(const StreamGuard&) = delete;
  StreamGuard& operator=(const StreamGuard&) = delete;

 private:
  int device_;
  cudaStream_t previous_;
};

}  // namespace sonata

#include "engine/cuda/stream.h"

#include <array>
#include <memory>
#include <mutex>

#include "base/cuda_check.h"
#include "base/cuda_status.h"
#include "kernels/cuda/gemm.h"

namespace sonata {
namespace {
constexpr int kMaxDevices = 64;
thread_local std::array<cudaStream_t, kMaxDevices> t_current_streams{};
}  // namespace

Stream::Stream(int device, int priority) : device_(device) {
  // Created on its device without switching the caller's.
  const CudaDeviceGuard on_device(Device::cuda(device));
  CUDA_CHECK(cudaStreamCreateWithPriority(&stream_, cudaStreamNonBlocking, priority));
}
Stream::~Stream() {
  if (stream_) CUDA_RELEASE(cudaStreamDestroy(stream_));
}

Event::Event(bool timing) {
  CUDA_CHECK(cudaEventCreateWithFlags(&event_, timing ? cudaEventDefault : cudaEventDisableTiming));
}
Event::~Event() {
  if (event_) CUDA_RELEASE(cudaEventDestroy(event_));
}
void Event::record(cudaStream_t stream) {
  CUDA_CHECK(cudaEventRecord(event_, stream));
}
void Event::block(cudaStream_t stream) const {
  CUDA_CHECK(cudaStreamWaitEvent(stream, event_, 0));
}
bool Event::query() const {
  return CUDA_QUERY(cudaEventQuery(event_));
}
void Event::synchronize() const {
  CUDA_CHECK(cudaEventSynchronize(event_));
}
float Event::elapsed_ms(const Event& since) const {
  float ms = 0;
  CUDA_CHECK(cudaEventElapsedTime(&ms, since.event_, event_));
  return ms;
}

cudaStream_t current_stream(int device) {
  SONATA_CHECK(device >= 0 && device < kMaxDevices, "CUDA device index ", device, " out of range");
  set_cuda_device(device);
  if (cudaStream_t stream = t_current_streams[device]) return stream;
  // One compute stream per device for the whole process, made on first use.
  static std::array<std::unique_ptr<Stream>, kMaxDevices> compute_streams;
  static std::array<std::once_flag, kMaxDevices> made;
  std::call_once(made[device], [&] {
    compute_streams[device] = std::make_unique<Stream>(device);
    // The library workspaces up front, before the memory pool has grown (#37 item 4).
    kernels::cuda::reserve_gemm_workspace(device, compute_streams[device]->get());
  });
  return compute_streams[device]->get();
}

StreamGuard::StreamGuard(const Stream& stream)
    : device_(stream.device()), previous_(t_current_streams[stream.device()]) {
  t_current_streams[device_] = stream.get();
}
StreamGuard::~StreamGuard() {
  t_current_streams[device_] = previous_;
}

}  // namespace sonata

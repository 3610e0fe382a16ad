#pragma once
// The emulated device's work queue, as the kernel executor (emu/exec) and the emulated
// libraries (emu/libs) see it. Everything a stream runs -- kernels, copies, library calls,
// host functions, collectives -- is a piece of work enqueued here; the scheduler runs it
// when stream order and events allow, in the least convenient legal order for a seed.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "driver_types.h"  // cudaStream_t, cudaError_t (emu/include)

namespace sonata::emu {

// A byte range that a piece of work reads or writes, checked against the live allocations
// when the work runs (not when it is enqueued): a range outside every allocation, or in one
// freed before the work ran in stream order, is an error naming the work.
struct MemRange {
  const void* data = nullptr;
  size_t bytes = 0;
};

// What a piece of work is, for the emulated profile (emu/runtime/profile.h).
enum class WorkKind : uint8_t { other, kernel, library, copy, memset, free, event, host_function };

// What a library call computes and moves, from its documented shapes, and which of the
// card's peaks bounds its arithmetic (tools/emu_profile.py's roofline model reads these).
struct WorkCost {
  double flops = 0;
  double bytes = 0;          // bytes its operands occupy: read once and written once
  const char* math = "";     // "tensor16" (fp16/bf16 tensor cores), "tf32", "fp32", "fp64"
  const char* library = "";  // "cublas", "cudnn.conv", "cudnn.rnn", "cufft", "cub", "nccl"...
};

struct Work {
  std::string name;  // "kernel scale_kernel<float>", "cublasGemmEx", "ncclAllReduce"
  WorkKind kind = WorkKind::other;
  WorkCost cost;
  std::function<void()> run;    // runs on whichever host thread drives the scheduler
  std::vector<MemRange> reads;  // checked before run(); written ranges become initialised
  std::vector<MemRange> writes;
  // Optional: while it returns false the work is not started (a collective waiting for its
  // peers in other processes). It must become true eventually -- a timeout included, after
  // which run() reports the error -- or a synchronisation waiting on the work never ends.
  std::function<bool()> ready;
};

// Enqueues `work` on `stream` (0 or cudaStreamLegacy: the legacy default stream of the
// calling thread's current device, with its implicit synchronisation). Returns
// cudaErrorInvalidResourceHandle for a destroyed or unknown stream, or the device's sticky
// error; the work does not run then. A thread the device-selection rule refuses gets
// cudaErrorDeviceUninitialized (and a message naming the work); inside a host function,
// cudaErrorNotPermitted. Work may enqueue more work while it runs. Nothing is recorded as
// the thread's last error: the caller decides (a launch records its own).
cudaError_t enqueue(cudaStream_t stream, Work work);

// The device a stream belongs to (the legacy default stream: the calling thread's device,
// under current_device()'s rule, so it may throw UsageError too); -1 for an unknown or
// destroyed stream.
int stream_device(cudaStream_t stream);

// The calling thread's current device. Refuses (throws sonata::emu::UsageError naming the
// thread) a thread that never selected a device in a process that selected one other than
// 0 on another thread: on a card such a thread silently opens a context on GPU 0.
int current_device();

// Called while a piece of work runs: records an error that a card reports asynchronously
// (cudaErrorIllegalAddress, cudaErrorLaunchFailure...). It becomes the device's sticky error,
// returned by every later call on that device, and the message names the work.
void report_device_fault(cudaError_t error, const std::string& message);

}  // namespace sonata::emu

// Stream entry points: creation with flags and priorities, destruction (outstanding work
// still completes), query (bounded progress), synchronisation, waits on events, host
// functions.
#include <algorithm>

#include "cuda_runtime_api.h"
#include "emu/runtime/allocator.h"
#include "emu/runtime/api_guard.h"

using namespace sonata::emu;

namespace {

constexpr int kLeastPriority = 0;
constexpr int kGreatestPriority = -5;

cudaError_t create(cudaStream_t* pStream, unsigned int flags, int priority) {
  const int device = current_device();
  if (!pStream || (flags & ~unsigned{cudaStreamNonBlocking})) return cudaErrorInvalidValue;
  if (const cudaError_t sticky = sticky_error(device)) return sticky;
  // As the runtime does, a priority outside the range is clamped to it.
  priority = std::clamp(priority, kGreatestPriority, kLeastPriority);
  *pStream = create_stream(device, flags, priority);
  return cudaSuccess;
}

}  // namespace

extern "C" {

cudaError_t cudaStreamCreate(cudaStream_t* pStream) {
  return api_call("cudaStreamCreate", [&] { return create(pStream, cudaStreamDefault, 0); });
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* pStream, unsigned int flags) {
  return api_call("cudaStreamCreateWithFlags", [&] { return create(pStream, flags, 0); });
}

cudaError_t cudaStreamCreateWithPriority(cudaStream_t* pStream, unsigned int flags, int priority) {
  return api_call("cudaStreamCreateWithPriority", [&] { return create(pStream, flags, priority); });
}

cudaError_t cudaStreamGetPriority(cudaStream_t hStream, int* priority) {
  return api_call("cudaStreamGetPriority", [&] {
    StreamState* stream = resolve_stream(hStream);
    if (!stream) return cudaErrorInvalidResourceHandle;
    if (!priority) return cudaErrorInvalidValue;
    *priority = stream->priority;
    return cudaSuccess;
  });
}

cudaError_t cudaStreamGetFlags(cudaStream_t hStream, unsigned int* flags) {
  return api_call("cudaStreamGetFlags", [&] {
    StreamState* stream = resolve_stream(hStream);
    if (!stream) return cudaErrorInvalidResourceHandle;
    if (!flags) return cudaErrorInvalidValue;
    *flags = stream->flags;
    return cudaSuccess;
  });
}

cudaError_t cudaStreamDestroy(cudaStream_t hStream) {
  return api_call("cudaStreamDestroy", [&] {
    if (hStream == nullptr || hStream == cudaStreamLegacy || hStream == cudaStreamPerThread) {
      return cudaErrorInvalidResourceHandle;
    }
    StreamState* stream = resolve_stream(hStream);
    if (!stream) return cudaErrorInvalidResourceHandle;
    destroy_stream(stream);  // its pending work stays queued and runs when needed
    return cudaSuccess;
  });
}

cudaError_t cudaStreamQuery(cudaStream_t hStream) {
  return api_call("cudaStreamQuery", [&] {
    StreamState* stream = resolve_stream(hStream);
    if (!stream) return cudaErrorInvalidResourceHandle;
    const bool done = query_done({stream_tail(*stream)});
    if (const cudaError_t sticky = sticky_error(stream->device)) return sticky;
    return done ? cudaSuccess : cudaErrorNotReady;
  });
}

cudaError_t cudaStreamSynchronize(cudaStream_t hStream) {
  return api_call("cudaStreamSynchronize", [&] {
    StreamState* stream = resolve_stream(hStream);
    if (!stream) return cudaErrorInvalidResourceHandle;
    if (!run_until({stream_tail(*stream)})) return cudaErrorUnknown;
    trim_pools_to_threshold();
    return sticky_error(stream->device);
  });
}

cudaError_t cudaStreamWaitEvent(cudaStream_t hStream, cudaEvent_t hEvent, unsigned int flags) {
  return api_call("cudaStreamWaitEvent", [&] {
    StreamState* stream = resolve_stream(hStream);
    if (!stream) return cudaErrorInvalidResourceHandle;
    EventState* event = resolve_event(hEvent);
    if (!event) return cudaErrorInvalidResourceHandle;
    if (flags != 0) return cudaErrorInvalidValue;
    if (const cudaError_t sticky = sticky_error(stream->device)) return sticky;
    // Waits for the event's last record as of now; an event never recorded is no wait.
    if (event->node && !event->node->done) {
      Work wait;
      wait.name = "cudaStreamWaitEvent";
      wait.kind = WorkKind::event;
      enqueue_node(stream, std::move(wait), {event->node});
    }
    return cudaSuccess;
  });
}

cudaError_t cudaLaunchHostFunc(cudaStream_t hStream, cudaHostFn_t fn, void* userData) {
  return api_call("cudaLaunchHostFunc", [&] {
    StreamState* stream = resolve_stream(hStream);
    if (!stream) return cudaErrorInvalidResourceHandle;
    if (!fn) return cudaErrorInvalidValue;
    if (const cudaError_t sticky = sticky_error(stream->device)) return sticky;
    enqueue_host_function(stream, fn, userData);
    return cudaSuccess;
  });
}

}  // extern "C"

// Event entry points. A record enqueues a marker on the stream; query and synchronize wait
// for the last record's marker; elapsed time is measured between two completed markers.
#include <chrono>

#include "cuda_runtime_api.h"
#include "emu/runtime/allocator.h"
#include "emu/runtime/api_guard.h"

using namespace sonata::emu;

namespace {

constexpr unsigned kEventFlags =
    cudaEventBlockingSync | cudaEventDisableTiming | cudaEventInterprocess;

cudaError_t create(cudaEvent_t* event, unsigned int flags) {
  const int device = current_device();
  if (!event || (flags & ~kEventFlags)) return cudaErrorInvalidValue;
  // An interprocess event must not time (as documented).
  if ((flags & cudaEventInterprocess) && !(flags & cudaEventDisableTiming)) {
    return cudaErrorInvalidValue;
  }
  if (const cudaError_t sticky = sticky_error(device)) return sticky;
  *event = create_event(device, flags);
  return cudaSuccess;
}

cudaError_t record(const char* call, cudaEvent_t hEvent, cudaStream_t hStream) {
  EventState* event = resolve_event(hEvent);
  StreamState* stream = resolve_stream(hStream);
  if (!event || !stream) return cudaErrorInvalidResourceHandle;
  if (event->device != stream->device) {
    return refuse(call, cudaErrorInvalidResourceHandle,
                  "the event belongs to device " + std::to_string(event->device) +
                      ", the stream to device " + std::to_string(stream->device));
  }
  if (const cudaError_t sticky = sticky_error(stream->device)) return sticky;
  Work marker;
  marker.name = "cudaEventRecord";
  marker.kind = WorkKind::event;
  event->node = enqueue_node(stream, std::move(marker));
  event->recorded = true;
  return cudaSuccess;
}

}  // namespace

extern "C" {

cudaError_t cudaEventCreate(cudaEvent_t* event) {
  return api_call("cudaEventCreate", [&] { return create(event, cudaEventDefault); });
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int flags) {
  return api_call("cudaEventCreateWithFlags", [&] { return create(event, flags); });
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  return api_call("cudaEventRecord", [&] { return record("cudaEventRecord", event, stream); });
}

cudaError_t cudaEventRecordWithFlags(cudaEvent_t event, cudaStream_t stream, unsigned int flags) {
  return api_call("cudaEventRecordWithFlags", [&] {
    if (flags != cudaEventRecordDefault) return cudaErrorInvalidValue;
    return record("cudaEventRecordWithFlags", event, stream);
  });
}

cudaError_t cudaEventQuery(cudaEvent_t hEvent) {
  return api_call("cudaEventQuery", [&] {
    EventState* event = resolve_event(hEvent);
    if (!event) return cudaErrorInvalidResourceHandle;
    const bool done = query_done({event->node});
    if (const cudaError_t sticky = sticky_error(event->device)) return sticky;
    return done ? cudaSuccess : cudaErrorNotReady;
  });
}

cudaError_t cudaEventSynchronize(cudaEvent_t hEvent) {
  return api_call("cudaEventSynchronize", [&] {
    EventState* event = resolve_event(hEvent);
    if (!event) return cudaErrorInvalidResourceHandle;
    if (!run_until({event->node})) return cudaErrorUnknown;
    trim_pools_to_threshold();
    return sticky_error(event->device);
  });
}

cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t hStart, cudaEvent_t hEnd) {
  return api_call("cudaEventElapsedTime", [&] {
    EventState* start = resolve_event(hStart);
    EventState* end = resolve_event(hEnd);
    if (!ms) return cudaErrorInvalidValue;
    if (!start || !end) return cudaErrorInvalidResourceHandle;
    if ((start->flags | end->flags) & cudaEventDisableTiming) {
      return refuse("cudaEventElapsedTime", cudaErrorInvalidResourceHandle,
                    "an event created with cudaEventDisableTiming has no time");
    }
    if (!start->recorded || !end->recorded) {
      return refuse("cudaEventElapsedTime", cudaErrorInvalidResourceHandle,
                    "an event was never recorded");
    }
    // Like a query: cudaErrorNotReady while either was pending when asked, some progress.
    const bool done = query_done({start->node, end->node});
    if (const cudaError_t sticky = sticky_error(end->device)) return sticky;
    if (!done) return cudaErrorNotReady;
    const std::chrono::duration<float, std::milli> elapsed =
        end->node->done_at - start->node->done_at;
    *ms = elapsed.count();
    return cudaSuccess;
  });
}

cudaError_t cudaEventDestroy(cudaEvent_t hEvent) {
  return api_call("cudaEventDestroy", [&] {
    EventState* event = resolve_event(hEvent);
    if (!event) return cudaErrorInvalidResourceHandle;
    destroy_event(event);
    return cudaSuccess;
  });
}

}  // extern "C"

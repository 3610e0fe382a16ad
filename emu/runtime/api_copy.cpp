// Copies and memsets. As the driver does: a pageable host source of an asynchronous copy is
// staged at the call; a pinned one is read when the copy runs in stream order; a copy to
// pageable host memory returns only when it is done; a pinned destination is written when
// the copy runs (a host read before synchronising sees the old bytes). The synchronous
// cudaMemcpy follows "API synchronization behavior": from pageable host memory to the
// device it synchronises the stream, stages the source and returns while the copy may still
// be landing; device to device it does not synchronise the host at all. Either way work on a
// non-blocking stream that reads the destination without an event may see the old bytes.
#include <cstring>
#include <memory>
#include <sstream>
#include <vector>

#include "cuda_runtime_api.h"
#include "emu/runtime/api_guard.h"
#include "emu/runtime/memory_arena.h"
#include "emu/runtime/memory_map.h"

using namespace sonata::emu;

namespace {

enum class Where { device, pinned, pageable };

Where where(const void* pointer) {
  if (in_device_arena(pointer)) return Where::device;
  if (in_pinned_arena(pointer)) return Where::pinned;
  return Where::pageable;
}

const char* kind_name(cudaMemcpyKind kind) {
  switch (kind) {
    case cudaMemcpyHostToHost:
      return "HostToHost";
    case cudaMemcpyHostToDevice:
      return "HostToDevice";
    case cudaMemcpyDeviceToHost:
      return "DeviceToHost";
    case cudaMemcpyDeviceToDevice:
      return "DeviceToDevice";
    default:
      return "Default";
  }
}

// The direction the pointers give (cudaMemcpyDefault), or whether `kind` matches them.
bool resolve_kind(cudaMemcpyKind kind, const void* dst, const void* src, cudaMemcpyKind* actual) {
  const bool dst_device = where(dst) == Where::device;
  const bool src_device = where(src) == Where::device;
  const cudaMemcpyKind inferred =
      src_device ? (dst_device ? cudaMemcpyDeviceToDevice : cudaMemcpyDeviceToHost)
                 : (dst_device ? cudaMemcpyHostToDevice : cudaMemcpyHostToHost);
  *actual = inferred;
  return kind == cudaMemcpyDefault || kind == inferred;
}

// Checks one end of a copy when it runs; a read of never-written bytes is not an error for a
// copy (whole buffers are copied), the destination inherits the source's shadow instead.
bool end_ok(const void* pointer, size_t bytes, AccessKind kind) {
  const AccessCheck check = check_access(pointer, bytes, kind);
  if (check.verdict == AccessVerdict::ok || check.verdict == AccessVerdict::outside_device_memory ||
      check.verdict == AccessVerdict::uninitialised) {
    return true;
  }
  report_device_fault(cudaErrorIllegalAddress, "memcheck: " + check.detail);
  return false;
}

Work copy_work(std::string name, void* dst, const void* src, size_t count, bool stage) {
  std::shared_ptr<std::vector<char>> staged;
  if (stage) {
    staged = std::make_shared<std::vector<char>>(static_cast<const char*>(src),
                                                 static_cast<const char*>(src) + count);
  }
  Work work;
  work.name = name;
  work.kind = WorkKind::copy;
  work.cost.bytes = double(count);
  work.run = [dst, src, count, staged] {
    const void* from = staged ? static_cast<const void*>(staged->data()) : src;
    if (!staged && !end_ok(src, count, AccessKind::read)) return;
    if (!end_ok(dst, count, AccessKind::write)) return;
    std::memmove(dst, from, count);
    // A device-to-device copy carries the source's initialisation over.
    if (!staged && in_device_arena(src) && in_device_arena(dst)) {
      Block* to = find_block(dst);
      const Block* from_block = find_block(src);
      if (to && from_block) {
        copy_initialised(*to, reinterpret_cast<uintptr_t>(dst) - to->base, *from_block,
                         reinterpret_cast<uintptr_t>(src) - from_block->base, count);
      }
    }
  };
  return work;
}

std::string copy_name(const char* call, cudaMemcpyKind kind, size_t count) {
  std::ostringstream name;
  name << call << " " << kind_name(kind) << " (" << count << " bytes)";
  return name.str();
}

// Whether a synchronous cudaMemcpy returns before its copy lands ("API synchronization
// behavior"): "For transfers from pageable host memory to device memory, a stream sync is
// performed before the copy is initiated. The function will return once the pageable buffer
// has been copied to the staging memory for DMA transfer to device memory, but the DMA to
// final destination may not have completed." and "For transfers from device memory to
// device memory, no host-side synchronization is performed."
bool lands_after_return(const void* dst, const void* src) {
  return where(dst) == Where::device &&
         (where(src) == Where::pageable || where(src) == Where::device);
}

// Enqueues a copy on `stream`; waits for it when `wait` (a synchronous cudaMemcpy, but see
// lands_after_return) or when the destination is pageable.
cudaError_t copy(const char* call, void* dst, const void* src, size_t count, cudaMemcpyKind kind,
                 StreamState* stream, bool wait) {
  if (!stream) return cudaErrorInvalidResourceHandle;
  if (kind < cudaMemcpyHostToHost || kind > cudaMemcpyDefault)
    return cudaErrorInvalidMemcpyDirection;
  if (const cudaError_t sticky = sticky_error(stream->device)) return sticky;
  if (count == 0) return cudaSuccess;
  if (!dst || !src) return cudaErrorInvalidValue;
  cudaMemcpyKind actual;
  if (!resolve_kind(kind, dst, src, &actual)) {
    std::ostringstream why;
    why << "kind " << kind_name(kind) << " does not match the pointers (dst " << dst << ", src "
        << src << " make it " << kind_name(actual) << ")";
    return refuse(call, cudaErrorInvalidValue, why.str());
  }
  const bool early_return = wait && lands_after_return(dst, src);
  if (early_return && where(src) == Where::pageable) {
    // The stream sync before the copy is initiated.
    if (!run_until({stream_tail(*stream)})) return cudaErrorUnknown;
    if (const cudaError_t sticky = sticky_error(stream->device)) return sticky;
  }
  const bool stage = where(src) == Where::pageable && (!wait || early_return);
  const bool blocking = (wait && !early_return) || where(dst) == Where::pageable;
  NodePtr node =
      enqueue_node(stream, copy_work(copy_name(call, actual, count), dst, src, count, stage));
  if (blocking && !run_until({node})) return cudaErrorUnknown;
  return sticky_error(stream->device);
}

cudaError_t peer_copy(const char* call, void* dst, int dstDevice, const void* src, int srcDevice,
                      size_t count, StreamState* stream, bool wait) {
  if (!stream) return cudaErrorInvalidResourceHandle;
  if (!valid_device(dstDevice) || !valid_device(srcDevice)) return cudaErrorInvalidDevice;
  if (const cudaError_t sticky = sticky_error(stream->device)) return sticky;
  if (count == 0) return cudaSuccess;
  const Block* to = find_block(dst);
  const Block* from = find_block(src);
  if (!to || to->device != dstDevice || !from || from->device != srcDevice) {
    std::ostringstream why;
    why << "dst " << dst << " is not memory of device " << dstDevice << ", or src " << src
        << " is not memory of device " << srcDevice;
    return refuse(call, cudaErrorInvalidValue, why.str());
  }
  std::ostringstream name;
  name << call << " device " << srcDevice << " -> device " << dstDevice << " (" << count
       << " bytes)";
  NodePtr node = enqueue_node(stream, copy_work(name.str(), dst, src, count, false));
  if (wait && !run_until({node})) return cudaErrorUnknown;
  return sticky_error(stream->device);
}

Work memset_work(void* dst, int value, size_t count) {
  Work work;
  work.name = "cudaMemset (" + std::to_string(count) + " bytes)";
  work.kind = WorkKind::memset;
  work.cost.bytes = double(count);
  work.writes.push_back({dst, count});
  work.run = [dst, value, count] { std::memset(dst, value, count); };
  return work;
}

cudaError_t memset(const char* call, void* dst, int value, size_t count, StreamState* stream) {
  if (!stream) return cudaErrorInvalidResourceHandle;
  if (const cudaError_t sticky = sticky_error(stream->device)) return sticky;
  if (count == 0) return cudaSuccess;
  if (!in_device_arena(dst)) {
    std::ostringstream why;
    why << dst << " is not device memory";
    return refuse(call, cudaErrorInvalidValue, why.str());
  }
  enqueue_node(stream, memset_work(dst, value, count));
  return cudaSuccess;
}

}  // namespace

extern "C" {

cudaError_t cudaMemcpy(void* dst, const void* src, size_t count, cudaMemcpyKind kind) {
  return api_call("cudaMemcpy", [&] {
    return copy("cudaMemcpy", dst, src, count, kind, resolve_stream(nullptr), /*wait=*/true);
  });
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t count, cudaMemcpyKind kind,
                            cudaStream_t stream) {
  return api_call("cudaMemcpyAsync", [&] {
    return copy("cudaMemcpyAsync", dst, src, count, kind, resolve_stream(stream), /*wait=*/false);
  });
}

cudaError_t cudaMemcpyPeer(void* dst, int dstDevice, const void* src, int srcDevice, size_t count) {
  return api_call("cudaMemcpyPeer", [&] {
    return peer_copy("cudaMemcpyPeer", dst, dstDevice, src, srcDevice, count,
                     resolve_stream(nullptr), /*wait=*/true);
  });
}

cudaError_t cudaMemcpyPeerAsync(void* dst, int dstDevice, const void* src, int srcDevice,
                                size_t count, cudaStream_t stream) {
  return api_call("cudaMemcpyPeerAsync", [&] {
    return peer_copy("cudaMemcpyPeerAsync", dst, dstDevice, src, srcDevice, count,
                     resolve_stream(stream), /*wait=*/false);
  });
}

cudaError_t cudaMemset(void* devPtr, int value, size_t count) {
  return api_call("cudaMemset", [&] {
    return memset("cudaMemset", devPtr, value, count, resolve_stream(nullptr));
  });
}

cudaError_t cudaMemsetAsync(void* devPtr, int value, size_t count, cudaStream_t stream) {
  return api_call("cudaMemsetAsync", [&] {
    return memset("cudaMemsetAsync", devPtr, value, count, resolve_stream(stream));
  });
}

}  // extern "C"

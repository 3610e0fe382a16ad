// Allocation entry points: cudaMalloc / cudaFree (which synchronises the device), the
// stream-ordered allocator and its pool, pinned host memory.
#include <sstream>

#include "cuda_runtime_api.h"
#include "emu/runtime/allocator.h"
#include "emu/runtime/api_guard.h"
#include "emu/runtime/memory_arena.h"

using namespace sonata::emu;

namespace {

std::string pointer_text(const void* pointer) {
  std::ostringstream text;
  text << pointer;
  return text.str();
}

// Why `pointer` is not a live allocation that `call` may free.
cudaError_t bad_free(const char* call, const void* pointer) {
  const Block* block = block_at(pointer);
  std::string why;
  if (block && !block->live) {
    why = pointer_text(pointer) + " was already freed (" + describe(*block) + ")";
  } else if (block && block->free_pending) {
    why = pointer_text(pointer) + " already has a cudaFreeAsync pending (" + describe(*block) + ")";
  } else {
    why = pointer_text(pointer) + " is not the start of a live allocation of this call's kind";
  }
  return refuse(call, cudaErrorInvalidValue, why);
}

}  // namespace

extern "C" {

cudaError_t cudaMalloc(void** devPtr, size_t size) {
  return api_call("cudaMalloc", [&] {
    const int device = current_device();
    if (!devPtr) return cudaErrorInvalidValue;
    if (const cudaError_t sticky = sticky_error(device)) return sticky;
    *devPtr = nullptr;
    if (size == 0) return cudaSuccess;
    Block* block = allocate_device(device, size, /*pooled=*/false);
    if (!block) return cudaErrorMemoryAllocation;
    *devPtr = reinterpret_cast<void*>(block->base);
    return cudaSuccess;
  });
}

cudaError_t cudaFree(void* devPtr) {
  return api_call("cudaFree", [&] {
    const int current = current_device();
    if (!devPtr) return sticky_error(current);
    Block* block = live_block_at(devPtr);
    if (!block || block->kind != BlockKind::device || block->free_pending) {
      return bad_free("cudaFree", devPtr);
    }
    // cudaFree synchronises: all work of the device runs before the memory is freed.
    if (!run_until(device_tails(block->device))) return cudaErrorUnknown;
    release_block(*block);
    return sticky_error(block->device);
  });
}

cudaError_t cudaMallocAsync(void** devPtr, size_t size, cudaStream_t hStream) {
  return api_call("cudaMallocAsync", [&] {
    StreamState* stream = resolve_stream(hStream);
    if (!stream) return cudaErrorInvalidResourceHandle;
    if (!devPtr) return cudaErrorInvalidValue;
    if (const cudaError_t sticky = sticky_error(stream->device)) return sticky;
    *devPtr = nullptr;
    if (size == 0) return cudaSuccess;
    Block* block = allocate_device(stream->device, size, /*pooled=*/true);
    if (!block) return cudaErrorMemoryAllocation;
    *devPtr = reinterpret_cast<void*>(block->base);
    return cudaSuccess;
  });
}

cudaError_t cudaFreeAsync(void* devPtr, cudaStream_t hStream) {
  return api_call("cudaFreeAsync", [&] {
    StreamState* stream = resolve_stream(hStream);
    if (!stream) return cudaErrorInvalidResourceHandle;
    if (const cudaError_t sticky = sticky_error(stream->device)) return sticky;
    if (!devPtr) return cudaSuccess;
    Block* block = live_block_at(devPtr);
    if (!block || block->kind != BlockKind::device || block->free_pending) {
      return bad_free("cudaFreeAsync", devPtr);
    }
    // The block is freed in stream order: work the stream runs before this point may use it;
    // work of other streams must be ordered before it by events, or it finds it freed.
    block->free_pending = true;
    note_pool_free_enqueued(*block);
    Work work;
    work.name = "cudaFreeAsync(" + describe(*block) + ")";
    work.kind = WorkKind::free;
    work.run = [block] { release_block(*block); };
    enqueue_node(stream, std::move(work));
    return cudaSuccess;
  });
}

cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t* memPool, int device) {
  return api_call("cudaDeviceGetDefaultMemPool", [&] {
    if (!memPool) return cudaErrorInvalidValue;
    if (!valid_device(device)) return cudaErrorInvalidDevice;
    *memPool = default_pool(device);
    return cudaSuccess;
  });
}

cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t memPool, cudaMemPoolAttr attr, void* value) {
  return api_call("cudaMemPoolSetAttribute", [&] {
    const int device = pool_device(memPool);
    if (device < 0 || !value) return cudaErrorInvalidValue;
    return set_pool_attribute(device, attr, value) ? cudaSuccess : cudaErrorInvalidValue;
  });
}

cudaError_t cudaMemPoolGetAttribute(cudaMemPool_t memPool, cudaMemPoolAttr attr, void* value) {
  return api_call("cudaMemPoolGetAttribute", [&] {
    const int device = pool_device(memPool);
    if (device < 0 || !value) return cudaErrorInvalidValue;
    return get_pool_attribute(device, attr, value) ? cudaSuccess : cudaErrorInvalidValue;
  });
}

cudaError_t cudaMemPoolTrimTo(cudaMemPool_t memPool, size_t minBytesToKeep) {
  return api_call("cudaMemPoolTrimTo", [&] {
    const int device = pool_device(memPool);
    if (device < 0) return cudaErrorInvalidValue;
    trim_pool(device, minBytesToKeep);
    return cudaSuccess;
  });
}

cudaError_t cudaHostAlloc(void** pHost, size_t size, unsigned int flags) {
  return api_call("cudaHostAlloc", [&] {
    if (!pHost || (flags & ~0x7u)) return cudaErrorInvalidValue;
    *pHost = nullptr;
    if (size == 0) return cudaSuccess;
    Block* block = allocate_pinned(size);
    if (!block) return cudaErrorMemoryAllocation;
    *pHost = reinterpret_cast<void*>(block->base);
    return cudaSuccess;
  });
}

cudaError_t cudaMallocHost(void** ptr, size_t size) {
  return cudaHostAlloc(ptr, size, cudaHostAllocDefault);
}

cudaError_t cudaFreeHost(void* ptr) {
  return api_call("cudaFreeHost", [&] {
    if (!ptr) return cudaSuccess;
    Block* block = live_block_at(ptr);
    if (!block || block->kind != BlockKind::pinned) return bad_free("cudaFreeHost", ptr);
    // Freeing pinned memory synchronises (copies from or to it may still be pending).
    if (!run_until(all_tails())) return cudaErrorUnknown;
    release_block(*block);
    return cudaSuccess;
  });
}

}  // extern "C"

// A stand-in for emu-runtime's library, linked into the executor's self-tests only until
// sonata_emu_runtime exists: work runs at once when enqueued, device memory is a bump
// allocator in a reserved arena (never reused, freed blocks stay recorded), with a byte
// shadow for initcheck. Only the calls the tests make.
#include <sys/mman.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <sstream>
#include <vector>

#include <cuda_runtime_api.h>

#include "emu/runtime/device_work.h"
#include "emu/runtime/memory_map.h"

namespace sonata::emu {
namespace {

constexpr size_t kArenaBytes = size_t(1) << 32;

struct Allocation {
  uintptr_t base;
  size_t bytes;
  bool freed;
};

struct Standin {
  std::mutex mutex;
  char* arena = nullptr;
  uint8_t* written = nullptr;  // one byte per arena byte
  size_t used = 0;
  std::vector<Allocation> allocations;
  cudaError_t sticky = cudaSuccess;
  Standin() {
    arena = static_cast<char*>(mmap(nullptr, kArenaBytes, PROT_READ | PROT_WRITE,
                                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0));
    written = static_cast<uint8_t*>(mmap(nullptr, kArenaBytes, PROT_READ | PROT_WRITE,
                                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0));
  }
};
Standin& standin() {
  static auto* s = new Standin;
  return *s;
}
thread_local cudaError_t t_last_error = cudaSuccess;

const Allocation* find(uintptr_t a) {
  for (const Allocation& x : standin().allocations)
    if (a - x.base < x.bytes) return &x;
  return nullptr;
}

}  // namespace

cudaError_t enqueue(cudaStream_t, Work work) {
  if (standin().sticky != cudaSuccess) return standin().sticky;
  work.run();
  return cudaSuccess;
}
int stream_device(cudaStream_t) {
  return 0;
}
int current_device() {
  return 0;
}
void report_device_fault(cudaError_t error, const std::string&) {
  if (standin().sticky == cudaSuccess) standin().sticky = error;
}
void set_last_error(cudaError_t error) {
  t_last_error = error;
}

bool in_device_arena(const void* address) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(address);
  return a - reinterpret_cast<uintptr_t>(standin().arena) < kArenaBytes;
}

AccessCheck check_access(const void* address, size_t bytes, AccessKind kind) {
  if (!in_device_arena(address)) return {AccessVerdict::outside_device_memory, {}};
  Standin& s = standin();
  const uintptr_t a = reinterpret_cast<uintptr_t>(address);
  const Allocation* x = find(a);
  auto describe = [&](const Allocation* y) {
    std::ostringstream out;
    if (y)
      out << "allocation base 0x" << std::hex << y->base << std::dec << ", size " << y->bytes
          << ", device 0, offset " << (a - y->base);
    return out.str();
  };
  if (!x || a + bytes > x->base + x->bytes) return {AccessVerdict::out_of_bounds, describe(x)};
  if (x->freed) return {AccessVerdict::freed, describe(x)};
  uint8_t* shadow = s.written + (a - reinterpret_cast<uintptr_t>(s.arena));
  if (kind == AccessKind::write) {
    std::memset(shadow, 1, bytes);
  } else {
    for (size_t i = 0; i < bytes; ++i)
      if (!shadow[i]) return {AccessVerdict::uninitialised, describe(x)};
  }
  return {};
}

}  // namespace sonata::emu

using sonata::emu::standin;

extern "C" {

cudaError_t cudaMalloc(void** pointer, size_t bytes) {
  auto& s = standin();
  std::lock_guard lock(s.mutex);
  const size_t rounded = (bytes + 255) / 256 * 256 + 256;  // a red zone after each block
  *pointer = s.arena + s.used;
  s.allocations.push_back({reinterpret_cast<uintptr_t>(*pointer), bytes, false});
  s.used += rounded;
  return cudaSuccess;
}
cudaError_t cudaFree(void* pointer) {
  if (!pointer) return cudaSuccess;
  auto& s = standin();
  std::lock_guard lock(s.mutex);
  for (auto& x : s.allocations)
    if (x.base == reinterpret_cast<uintptr_t>(pointer) && !x.freed) {
      x.freed = true;
      return cudaSuccess;
    }
  return cudaErrorInvalidValue;
}
cudaError_t cudaMemcpy(void* dst, const void* src, size_t count, enum cudaMemcpyKind) {
  if (standin().sticky != cudaSuccess) return standin().sticky;
  std::memcpy(dst, src, count);
  if (sonata::emu::in_device_arena(dst))
    sonata::emu::check_access(dst, count, sonata::emu::AccessKind::write);
  return cudaSuccess;
}
cudaError_t cudaMemset(void* dst, int value, size_t count) {
  std::memset(dst, value, count);
  sonata::emu::check_access(dst, count, sonata::emu::AccessKind::write);
  return cudaSuccess;
}
cudaError_t cudaDeviceSynchronize(void) {
  return standin().sticky;
}
cudaError_t cudaDeviceReset(void) {
  standin().sticky = cudaSuccess;
  return cudaSuccess;
}
cudaError_t cudaGetLastError(void) {
  const cudaError_t e = sonata::emu::t_last_error;
  sonata::emu::t_last_error = cudaSuccess;
  return e != cudaSuccess ? e : standin().sticky;
}
cudaError_t cudaPeekAtLastError(void) {
  return sonata::emu::t_last_error;
}
const char* cudaGetErrorName(cudaError_t error) {
  static thread_local char text[32];
  std::snprintf(text, sizeof text, "cudaError(%d)", int(error));
  return text;
}
cudaError_t cudaFuncSetAttribute(const void*, enum cudaFuncAttribute, int) {
  return cudaSuccess;
}

}  // extern "C"

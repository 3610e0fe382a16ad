// The entry points that GCC's -fsanitize=thread instrumentation calls, implemented here
// instead of by libtsan: kernel translation units are compiled with the instrumentation
// (emu/exec/CMakeLists.txt, sonata_emu_kernel_sources) and linked without the runtime, so
// every load and store of kernel code comes here. Outside a CUDA thread's fiber each hook
// returns after one thread-local load; inside, shared memory goes to the race and init
// shadow and device memory to the runtime's memory map.
//
// This file must not be compiled with -fsanitize=thread itself.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <sstream>

#include "emu/exec/access_profile.h"
#include "emu/exec/executor.h"
#include "emu/exec/read_only.h"
#include "emu/exec/shared_memory.h"
#include "emu/runtime/memory_map.h"

namespace sonata::emu::exec {
namespace {

const char* verdict_text(AccessVerdict verdict) {
  switch (verdict) {
    case AccessVerdict::out_of_bounds:
      return "is out of bounds (in no live allocation)";
    case AccessVerdict::freed:
      return "is in an allocation that was freed";
    case AccessVerdict::uninitialised:
      return "was never written (uninitialized device memory)";
    default:
      return "";
  }
}

__attribute__((noinline)) void report_global(const void* address, size_t bytes, AccessKind kind,
                                             const AccessCheck& c, bool atomic, const void* pc) {
  std::ostringstream check, detail;
  if (c.verdict == AccessVerdict::uninitialised) {
    check << "initcheck: Uninitialized __global__ memory read of size " << bytes << " bytes";
  } else {
    check << "memcheck: Invalid __global__ "
          << (atomic                     ? "atomic"
              : kind == AccessKind::read ? "read"
                                         : "write")
          << " of size " << bytes << " bytes";
  }
  detail << "Address " << address << ' ' << verdict_text(c.verdict) << " (pc " << pc << ")";
  if (!c.detail.empty()) detail << '\n' << c.detail;
  report_fault(
      c.verdict == AccessVerdict::uninitialised ? cudaErrorLaunchFailure : cudaErrorIllegalAddress,
      check.str(), detail.str());
}

// Granules of device memory known to be live and fully initialised during this grid:
// no access to them can fail a check or change the memory map (a write to initialised
// bytes leaves them initialised), so they skip check_access. Nothing frees or allocates
// while a grid runs (work runs one piece at a time), so the cache holds for the whole grid;
// reset_access_cache() empties it at each grid start.
constexpr int kGranuleShift = 6;  // 64 bytes
constexpr size_t kCacheEntries = 4096;
__thread uintptr_t t_granules[kCacheEntries] __attribute__((tls_model("initial-exec")));

inline bool cached(uintptr_t a, size_t bytes) {
  const uintptr_t first = a >> kGranuleShift, last = (a + bytes - 1) >> kGranuleShift;
  return t_granules[first % kCacheEntries] == first &&
         (last == first || t_granules[last % kCacheEntries] == last);
}

__attribute__((noinline)) void check_global(const void* address, size_t bytes, AccessKind kind,
                                            bool atomic, const void* pc) {
  {
    const AccessCheck c = check_access(address, bytes, kind);
    if (c.verdict == AccessVerdict::ok || c.verdict == AccessVerdict::outside_device_memory) {
      if (c.verdict == AccessVerdict::outside_device_memory) return;
      // Probe the whole granule after a read, or after a write that completes it: a read
      // probe has no side effect, and an ok verdict makes later accesses skip the map.
      const uintptr_t a = reinterpret_cast<uintptr_t>(address);
      const uintptr_t granule = a >> kGranuleShift;
      const bool completes = ((a + bytes) & ((uintptr_t(1) << kGranuleShift) - 1)) == 0;
      if ((kind == AccessKind::read || completes) && (a + bytes - 1) >> kGranuleShift == granule &&
          readable(reinterpret_cast<const void*>(granule << kGranuleShift), size_t(1)
                                                                                << kGranuleShift))
        t_granules[granule % kCacheEntries] = granule;
      return;
    }
    report_global(address, bytes, kind, c, atomic, pc);
  }
  stop_thread();  // after `c` is gone
}

// The common path of every hook: range compares, then the checks.
inline __attribute__((always_inline)) void access(const void* address, size_t bytes, bool write,
                                                  const void* pc) {
  if (!t_in_kernel || bytes == 0) return;
  const uintptr_t a = reinterpret_cast<uintptr_t>(address);
  if (g_access_profile) [[unlikely]]
    access_profile_record(t_clock.thread, a, bytes, write, false, pc);
  if (write && t_read_only_used && in_device_arena(address))
    note_write_after_read_only(a, bytes, pc);
  if (cached(a, bytes)) return;
  if (maybe_shared(a) &&
      shared_access(a, bytes, write ? SharedAccess::write : SharedAccess::read, pc))
    return;
  if (in_device_arena(address))
    check_global(address, bytes, write ? AccessKind::write : AccessKind::read, false, pc);
}

inline __attribute__((always_inline)) void atomic_access(const volatile void* address, size_t bytes,
                                                         bool reads, bool writes, const void* pc) {
  if (!t_in_kernel) return;
  const void* p = const_cast<const void*>(address);
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  if (g_access_profile) [[unlikely]]
    access_profile_record(t_clock.thread, a, bytes, writes, true, pc);
  if (writes && t_read_only_used && in_device_arena(p)) note_write_after_read_only(a, bytes, pc);
  if (cached(a, bytes)) return;
  if (maybe_shared(a) &&
      shared_access(a, bytes, reads ? SharedAccess::atomic : SharedAccess::write, pc))
    return;
  if (in_device_arena(p)) {
    if (reads) check_global(p, bytes, AccessKind::read, true, pc);
    if (writes) check_global(p, bytes, AccessKind::write, true, pc);
  }
}

}  // namespace

void reset_access_cache() {
  for (uintptr_t& granule : t_granules) granule = 0;
}

void device_load(void* to, const void* from, size_t bytes, const void* pc) {
  access(from, bytes, false, pc);
  std::memcpy(to, from, bytes);
}

}  // namespace sonata::emu::exec

using sonata::emu::exec::access;
using sonata::emu::exec::atomic_access;

#define SONATA_PC __builtin_return_address(0)

extern "C" {

void __tsan_init() {}
void __tsan_func_entry(void*) {}
void __tsan_func_exit() {}
void __tsan_vptr_update(void**, void*) {}
void __tsan_vptr_read(void**) {}

#define SONATA_TSAN_RW(n)                            \
  void __tsan_read##n(void* a) {                     \
    access(a, n, false, SONATA_PC);                  \
  }                                                  \
  void __tsan_write##n(void* a) {                    \
    access(a, n, true, SONATA_PC);                   \
  }                                                  \
  void __tsan_unaligned_read##n(void* a) {           \
    access(a, n, false, SONATA_PC);                  \
  }                                                  \
  void __tsan_unaligned_write##n(void* a) {          \
    access(a, n, true, SONATA_PC);                   \
  }                                                  \
  void __tsan_volatile_read##n(void* a) {            \
    access(a, n, false, SONATA_PC);                  \
  }                                                  \
  void __tsan_volatile_write##n(void* a) {           \
    access(a, n, true, SONATA_PC);                   \
  }                                                  \
  void __tsan_unaligned_volatile_read##n(void* a) {  \
    access(a, n, false, SONATA_PC);                  \
  }                                                  \
  void __tsan_unaligned_volatile_write##n(void* a) { \
    access(a, n, true, SONATA_PC);                   \
  }                                                  \
  void __tsan_read##n##_pc(void* a, void* pc) {      \
    access(a, n, false, pc);                         \
  }                                                  \
  void __tsan_write##n##_pc(void* a, void* pc) {     \
    access(a, n, true, pc);                          \
  }
SONATA_TSAN_RW(1)
SONATA_TSAN_RW(2)
SONATA_TSAN_RW(4)
SONATA_TSAN_RW(8)
SONATA_TSAN_RW(16)
#undef SONATA_TSAN_RW

void __tsan_read_range(void* a, unsigned long size) {
  access(a, size, false, SONATA_PC);
}
void __tsan_write_range(void* a, unsigned long size) {
  access(a, size, true, SONATA_PC);
}

void __tsan_atomic_thread_fence(int) {
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
}
void __tsan_atomic_signal_fence(int) {
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
}

// Atomics: checked as one atomic access, then done for real (host code in kernel
// translation units, std::mutex or shared_ptr, uses them from several host threads). The
// memory order is always sequentially consistent: at least as strong as asked.
#define SONATA_TSAN_ATOMIC(n, T)                                                            \
  T __tsan_atomic##n##_load(const volatile T* a, int) {                                     \
    atomic_access(a, sizeof(T), true, false, SONATA_PC);                                    \
    return __atomic_load_n(a, __ATOMIC_SEQ_CST);                                            \
  }                                                                                         \
  void __tsan_atomic##n##_store(volatile T* a, T v, int) {                                  \
    atomic_access(a, sizeof(T), false, true, SONATA_PC);                                    \
    __atomic_store_n(a, v, __ATOMIC_SEQ_CST);                                               \
  }                                                                                         \
  T __tsan_atomic##n##_exchange(volatile T* a, T v, int) {                                  \
    atomic_access(a, sizeof(T), true, true, SONATA_PC);                                     \
    return __atomic_exchange_n(a, v, __ATOMIC_SEQ_CST);                                     \
  }                                                                                         \
  T __tsan_atomic##n##_fetch_add(volatile T* a, T v, int) {                                 \
    atomic_access(a, sizeof(T), true, true, SONATA_PC);                                     \
    return __atomic_fetch_add(a, v, __ATOMIC_SEQ_CST);                                      \
  }                                                                                         \
  T __tsan_atomic##n##_fetch_sub(volatile T* a, T v, int) {                                 \
    atomic_access(a, sizeof(T), true, true, SONATA_PC);                                     \
    return __atomic_fetch_sub(a, v, __ATOMIC_SEQ_CST);                                      \
  }                                                                                         \
  T __tsan_atomic##n##_fetch_and(volatile T* a, T v, int) {                                 \
    atomic_access(a, sizeof(T), true, true, SONATA_PC);                                     \
    return __atomic_fetch_and(a, v, __ATOMIC_SEQ_CST);                                      \
  }                                                                                         \
  T __tsan_atomic##n##_fetch_or(volatile T* a, T v, int) {                                  \
    atomic_access(a, sizeof(T), true, true, SONATA_PC);                                     \
    return __atomic_fetch_or(a, v, __ATOMIC_SEQ_CST);                                       \
  }                                                                                         \
  T __tsan_atomic##n##_fetch_xor(volatile T* a, T v, int) {                                 \
    atomic_access(a, sizeof(T), true, true, SONATA_PC);                                     \
    return __atomic_fetch_xor(a, v, __ATOMIC_SEQ_CST);                                      \
  }                                                                                         \
  T __tsan_atomic##n##_fetch_nand(volatile T* a, T v, int) {                                \
    atomic_access(a, sizeof(T), true, true, SONATA_PC);                                     \
    return __atomic_fetch_nand(a, v, __ATOMIC_SEQ_CST);                                     \
  }                                                                                         \
  bool __tsan_atomic##n##_compare_exchange_strong(volatile T* a, T* c, T v, int, int) {     \
    atomic_access(a, sizeof(T), true, true, SONATA_PC);                                     \
    return __atomic_compare_exchange_n(a, c, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST); \
  }                                                                                         \
  bool __tsan_atomic##n##_compare_exchange_weak(volatile T* a, T* c, T v, int, int) {       \
    atomic_access(a, sizeof(T), true, true, SONATA_PC);                                     \
    return __atomic_compare_exchange_n(a, c, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST); \
  }                                                                                         \
  T __tsan_atomic##n##_compare_exchange_val(volatile T* a, T c, T v, int, int) {            \
    atomic_access(a, sizeof(T), true, true, SONATA_PC);                                     \
    __atomic_compare_exchange_n(a, &c, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);       \
    return c;                                                                               \
  }
SONATA_TSAN_ATOMIC(8, uint8_t)
SONATA_TSAN_ATOMIC(16, uint16_t)
SONATA_TSAN_ATOMIC(32, uint32_t)
SONATA_TSAN_ATOMIC(64, uint64_t)
SONATA_TSAN_ATOMIC(128, unsigned __int128)
#undef SONATA_TSAN_ATOMIC

}  // extern "C"

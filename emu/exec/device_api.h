#pragma once
// The device-side language for kernels compiled by g++ against the emulator (included by
// emu/include/cuda_runtime.h): qualifiers, barriers, warp intrinsics, atomics and math
// intrinsics. Barriers and warp intrinsics are the only points where the executor switches
// between CUDA threads (fibers); each names its call site so that divergence is reported
// where it happens.
#include <math.h>  // libstdc++'s: float overloads (::log(float)...) and ::isnan, as CUDA has
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <source_location>
#include <type_traits>

#include "../include/device_launch_parameters.h"
#include "../include/vector_types.h"

// Qualifiers: every function is an ordinary host function; launches go through
// sonata::emu::launch_kernel (emu/exec/launch.h).
#define __global__
#define __device__
#define __host__
#define __forceinline__ __inline__ __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...)
#define __grid_constant__
// One block runs at a time, so a static is the block's shared memory. GCC 12 ignores a
// section attribute on static locals of templates (they go to COMDAT .bss sections), so
// the executor recognises shared memory by address instead: writable static data touched
// by kernel code (emu/exec/shared_memory.h).
#define __shared__ static
#define __constant__ static

namespace sonata::emu::exec {

// __ldg's record for the read-only rule (emu/exec/read_only.h).
void note_read_only_load(const void* address, size_t bytes, const void* pc);
// One load of `bytes` bytes from device memory, checked (and profiled) as one access, as
// the card's single wide load instruction is: GCC splits a 16-byte struct returned by value
// into scalar loads, which the profile would count as four strided requests.
void device_load(void* to, const void* from, size_t bytes, const void* pc);

enum class BarrierKind : int { sync, count, any, all };
enum class WarpOp : int { sync, shfl, shfl_up, shfl_down, shfl_xor, ballot, any, all };

// Block barrier: returns the reduction of `predicate` over the block (count, any, all).
int block_barrier(BarrierKind kind, int predicate, const std::source_location& site);
// Warp collective: the lanes of `mask` all arrive at the same call site with the same
// mask; returns this lane's result (the source lane's value for shuffles, the ballot for
// votes). `operand` is the shuffle's lane, delta or lane mask.
uint64_t warp_collective(WarpOp op, unsigned mask, uint64_t value, int operand, int width,
                         const std::source_location& site);
// The lanes of the caller's warp that have not exited.
unsigned active_lanes();
// Aborts the calling CUDA thread with a device fault (__trap, a failed device assert).
[[noreturn]] void trap(const char* what, const std::source_location& site);

template <typename T>
inline uint64_t to_lane_bits(T value) {
  static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= 8,
                "warp shuffles move scalars of at most 8 bytes");
  uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof(T));
  return bits;
}
template <typename T>
inline T from_lane_bits(uint64_t bits) {
  T value;
  std::memcpy(&value, &bits, sizeof(T));
  return value;
}

// Keeps the compiler from fusing or reordering across an exactly rounded intrinsic.
template <typename T>
__attribute__((always_inline)) inline T opaque(T value) {
  asm("" : "+x"(value));
  return value;
}

}  // namespace sonata::emu::exec

using sonata_emu_site = std::source_location;
#define SONATA_EMU_SITE const std::source_location& site = std::source_location::current()

// ---------------------------------------------------------------------------------------
// Barriers and warp intrinsics

inline void __syncthreads(SONATA_EMU_SITE) {
  sonata::emu::exec::block_barrier(sonata::emu::exec::BarrierKind::sync, 0, site);
}
inline int __syncthreads_count(int predicate, SONATA_EMU_SITE) {
  return sonata::emu::exec::block_barrier(sonata::emu::exec::BarrierKind::count, predicate, site);
}
inline int __syncthreads_or(int predicate, SONATA_EMU_SITE) {
  return sonata::emu::exec::block_barrier(sonata::emu::exec::BarrierKind::any, predicate, site);
}
inline int __syncthreads_and(int predicate, SONATA_EMU_SITE) {
  return sonata::emu::exec::block_barrier(sonata::emu::exec::BarrierKind::all, predicate, site);
}
inline void __syncwarp(unsigned mask = 0xffffffffu, SONATA_EMU_SITE) {
  sonata::emu::exec::warp_collective(sonata::emu::exec::WarpOp::sync, mask, 0, 0, 32, site);
}

template <typename T>
inline T __shfl_sync(unsigned mask, T var, int src_lane, int width = 32, SONATA_EMU_SITE) {
  using namespace sonata::emu::exec;
  return from_lane_bits<T>(
      warp_collective(WarpOp::shfl, mask, to_lane_bits(var), src_lane, width, site));
}
template <typename T>
inline T __shfl_up_sync(unsigned mask, T var, unsigned delta, int width = 32, SONATA_EMU_SITE) {
  using namespace sonata::emu::exec;
  return from_lane_bits<T>(
      warp_collective(WarpOp::shfl_up, mask, to_lane_bits(var), int(delta), width, site));
}
template <typename T>
inline T __shfl_down_sync(unsigned mask, T var, unsigned delta, int width = 32, SONATA_EMU_SITE) {
  using namespace sonata::emu::exec;
  return from_lane_bits<T>(
      warp_collective(WarpOp::shfl_down, mask, to_lane_bits(var), int(delta), width, site));
}
template <typename T>
inline T __shfl_xor_sync(unsigned mask, T var, int lane_mask, int width = 32, SONATA_EMU_SITE) {
  using namespace sonata::emu::exec;
  return from_lane_bits<T>(
      warp_collective(WarpOp::shfl_xor, mask, to_lane_bits(var), lane_mask, width, site));
}
inline unsigned __ballot_sync(unsigned mask, int predicate, SONATA_EMU_SITE) {
  using namespace sonata::emu::exec;
  return unsigned(warp_collective(WarpOp::ballot, mask, predicate != 0, 0, 32, site));
}
inline int __any_sync(unsigned mask, int predicate, SONATA_EMU_SITE) {
  using namespace sonata::emu::exec;
  return int(warp_collective(WarpOp::any, mask, predicate != 0, 0, 32, site));
}
inline int __all_sync(unsigned mask, int predicate, SONATA_EMU_SITE) {
  using namespace sonata::emu::exec;
  return int(warp_collective(WarpOp::all, mask, predicate != 0, 0, 32, site));
}
inline unsigned __activemask() {
  return sonata::emu::exec::active_lanes();
}
inline void __trap(SONATA_EMU_SITE) {
  sonata::emu::exec::trap("__trap()", site);
}

// ---------------------------------------------------------------------------------------
// Memory: fences are real fences; __ldg is a plain load that also records its bytes for the
// read-only rule (emu/exec/read_only.h), then is checked like any load.

inline void __threadfence() {
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
}
inline void __threadfence_block() {
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
}
inline void __threadfence_system() {
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
}
template <typename T>
__inline__ __attribute__((always_inline)) T __ldg(const T* pointer) {
  const void* pc = __builtin_return_address(0);
  sonata::emu::exec::note_read_only_load(pointer, sizeof(T), pc);
  T value;
  sonata::emu::exec::device_load(&value, pointer, sizeof(T), pc);
  return value;
}

// ---------------------------------------------------------------------------------------
// Atomics. Under -fsanitize=thread each __atomic builtin becomes a __tsan_atomic* call,
// which the executor checks as an atomic access (never a race with another atomic).

#define SONATA_EMU_ATOMIC_INT(T)                                                              \
  inline T atomicAdd(T* address, T value) {                                                   \
    return __atomic_fetch_add(address, value, __ATOMIC_RELAXED);                              \
  }                                                                                           \
  inline T atomicSub(T* address, T value) {                                                   \
    return __atomic_fetch_sub(address, value, __ATOMIC_RELAXED);                              \
  }                                                                                           \
  inline T atomicExch(T* address, T value) {                                                  \
    return __atomic_exchange_n(address, value, __ATOMIC_RELAXED);                             \
  }                                                                                           \
  inline T atomicAnd(T* address, T value) {                                                   \
    return __atomic_fetch_and(address, value, __ATOMIC_RELAXED);                              \
  }                                                                                           \
  inline T atomicOr(T* address, T value) {                                                    \
    return __atomic_fetch_or(address, value, __ATOMIC_RELAXED);                               \
  }                                                                                           \
  inline T atomicXor(T* address, T value) {                                                   \
    return __atomic_fetch_xor(address, value, __ATOMIC_RELAXED);                              \
  }                                                                                           \
  inline T atomicCAS(T* address, T compare, T value) {                                        \
    __atomic_compare_exchange_n(address, &compare, value, false, __ATOMIC_RELAXED,            \
                                __ATOMIC_RELAXED);                                            \
    return compare;                                                                           \
  }                                                                                           \
  inline T atomicMax(T* address, T value) {                                                   \
    T old = __atomic_load_n(address, __ATOMIC_RELAXED);                                       \
    while (old < value && !__atomic_compare_exchange_n(address, &old, value, false,           \
                                                       __ATOMIC_RELAXED, __ATOMIC_RELAXED)) { \
    }                                                                                         \
    return old;                                                                               \
  }                                                                                           \
  inline T atomicMin(T* address, T value) {                                                   \
    T old = __atomic_load_n(address, __ATOMIC_RELAXED);                                       \
    while (value < old && !__atomic_compare_exchange_n(address, &old, value, false,           \
                                                       __ATOMIC_RELAXED, __ATOMIC_RELAXED)) { \
    }                                                                                         \
    return old;                                                                               \
  }
SONATA_EMU_ATOMIC_INT(int)
SONATA_EMU_ATOMIC_INT(unsigned int)
SONATA_EMU_ATOMIC_INT(unsigned long long)
SONATA_EMU_ATOMIC_INT(long long)
#undef SONATA_EMU_ATOMIC_INT

namespace sonata::emu::exec {
template <typename F, typename Bits, typename Op>
inline F atomic_float_update(F* address, Op op) {
  static_assert(sizeof(F) == sizeof(Bits));
  Bits* bits = reinterpret_cast<Bits*>(address);
  Bits old = __atomic_load_n(bits, __ATOMIC_RELAXED);
  for (;;) {
    F current;
    std::memcpy(&current, &old, sizeof(F));
    const F next = op(current);
    Bits desired;
    std::memcpy(&desired, &next, sizeof(F));
    if (__atomic_compare_exchange_n(bits, &old, desired, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
      return current;
  }
}
}  // namespace sonata::emu::exec

inline float atomicAdd(float* address, float value) {
  return sonata::emu::exec::atomic_float_update<float, uint32_t>(
      address, [value](float x) { return sonata::emu::exec::opaque(x) + value; });
}
inline double atomicAdd(double* address, double value) {
  return sonata::emu::exec::atomic_float_update<double, uint64_t>(
      address, [value](double x) { return sonata::emu::exec::opaque(x) + value; });
}
inline float atomicExch(float* address, float value) {
  return sonata::emu::exec::atomic_float_update<float, uint32_t>(address,
                                                                 [value](float) { return value; });
}
inline float atomicMax(float* address, float value) = delete;  // not a CUDA overload

// ---------------------------------------------------------------------------------------
// Exactly rounded arithmetic: IEEE single/double operations, never contracted into FMA.

inline float __fadd_rn(float a, float b) {
  using sonata::emu::exec::opaque;
  return opaque(opaque(a) + opaque(b));
}
inline float __fsub_rn(float a, float b) {
  using sonata::emu::exec::opaque;
  return opaque(opaque(a) - opaque(b));
}
inline float __fmul_rn(float a, float b) {
  using sonata::emu::exec::opaque;
  return opaque(opaque(a) * opaque(b));
}
inline float __fdiv_rn(float a, float b) {
  using sonata::emu::exec::opaque;
  return opaque(opaque(a) / opaque(b));
}
inline double __dadd_rn(double a, double b) {
  using sonata::emu::exec::opaque;
  return opaque(opaque(a) + opaque(b));
}
inline double __dsub_rn(double a, double b) {
  using sonata::emu::exec::opaque;
  return opaque(opaque(a) - opaque(b));
}
inline double __dmul_rn(double a, double b) {
  using sonata::emu::exec::opaque;
  return opaque(opaque(a) * opaque(b));
}
inline double __ddiv_rn(double a, double b) {
  using sonata::emu::exec::opaque;
  return opaque(opaque(a) / opaque(b));
}
inline float __fmaf_rn(float a, float b, float c) {
  return std::fma(a, b, c);
}
inline double __fma_rn(double a, double b, double c) {
  return std::fma(a, b, c);
}
inline float __fsqrt_rn(float x) {
  return std::sqrt(x);
}
inline float __frcp_rn(float x) {
  return 1.0f / x;
}

// Fast-math intrinsics: the card's are approximations; the accurate function is within
// their documented error.
inline float __expf(float x) {
  return std::exp(x);
}
inline float __exp10f(float x) {
  return std::pow(10.0f, x);
}
inline float __logf(float x) {
  return std::log(x);
}
inline float __log2f(float x) {
  return std::log2(x);
}
inline float __log10f(float x) {
  return std::log10(x);
}
inline float __sinf(float x) {
  return std::sin(x);
}
inline float __cosf(float x) {
  return std::cos(x);
}
inline float __tanf(float x) {
  return std::tan(x);
}
inline float __powf(float x, float y) {
  return std::pow(x, y);
}
inline float __fdividef(float x, float y) {
  return x / y;
}
inline float fdividef(float x, float y) {
  return x / y;
}
inline float __saturatef(float x) {
  return x < 0.0f ? 0.0f : (x > 1.0f ? 1.0f : (x == x ? x : 0.0f));
}
inline float rsqrtf(float x) {
  return 1.0f / std::sqrt(x);
}
inline double rsqrt(double x) {
  return 1.0 / std::sqrt(x);
}
inline float exp10f(float x) {
  return std::pow(10.0f, x);
}
inline void sincosf(float x, float* s, float* c) {
  *s = std::sin(x);
  *c = std::cos(x);
}
inline float normcdff(float x) {
  return 0.5f * std::erfc(-x * 0.70710678118654752f);
}
inline double normcdf(double x) {
  return 0.5 * std::erfc(-x * 0.70710678118654752440);
}

// Bit reinterpretation and integer intrinsics.
inline int __float_as_int(float x) {
  return std::bit_cast<int>(x);
}
inline unsigned __float_as_uint(float x) {
  return std::bit_cast<unsigned>(x);
}
inline float __int_as_float(int x) {
  return std::bit_cast<float>(x);
}
inline float __uint_as_float(unsigned x) {
  return std::bit_cast<float>(x);
}
inline long long __double_as_longlong(double x) {
  return std::bit_cast<long long>(x);
}
inline double __longlong_as_double(long long x) {
  return std::bit_cast<double>(x);
}
inline int __popc(unsigned x) {
  return __builtin_popcount(x);
}
inline int __popcll(unsigned long long x) {
  return __builtin_popcountll(x);
}
inline int __clz(int x) {
  return x == 0 ? 32 : __builtin_clz(unsigned(x));
}
inline int __clzll(long long x) {
  return x == 0 ? 64 : __builtin_clzll((unsigned long long)x);
}
inline int __ffs(int x) {
  return __builtin_ffs(x);
}
inline int __ffsll(long long x) {
  return __builtin_ffsll(x);
}
inline unsigned __brev(unsigned x) {
  x = ((x >> 1) & 0x55555555u) | ((x & 0x55555555u) << 1);
  x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);
  x = ((x >> 4) & 0x0f0f0f0fu) | ((x & 0x0f0f0f0fu) << 4);
  x = ((x >> 8) & 0x00ff00ffu) | ((x & 0x00ff00ffu) << 8);
  return (x >> 16) | (x << 16);
}
inline unsigned __umulhi(unsigned a, unsigned b) {
  return unsigned((unsigned long long)a * b >> 32);
}
inline int __mulhi(int a, int b) {
  return int((long long)a * b >> 32);
}
inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
  return (unsigned long long)((unsigned __int128)a * b >> 64);
}
inline long long clock64() {
  return (long long)__builtin_ia32_rdtsc();
}
inline void __nanosleep(unsigned) {}

// CUDA's global min/max overloads (integers compare as integers, floats as fminf/fmaxf).
#define SONATA_EMU_MIN_MAX(T) \
  inline T min(T a, T b) {    \
    return b < a ? b : a;     \
  }                           \
  inline T max(T a, T b) {    \
    return a < b ? b : a;     \
  }
SONATA_EMU_MIN_MAX(int)
SONATA_EMU_MIN_MAX(unsigned int)
SONATA_EMU_MIN_MAX(long)
SONATA_EMU_MIN_MAX(unsigned long)
SONATA_EMU_MIN_MAX(long long)
SONATA_EMU_MIN_MAX(unsigned long long)
#undef SONATA_EMU_MIN_MAX
inline float min(float a, float b) {
  return std::fmin(a, b);
}
inline float max(float a, float b) {
  return std::fmax(a, b);
}
inline double min(double a, double b) {
  return std::fmin(a, b);
}
inline double max(double a, double b) {
  return std::fmax(a, b);
}
inline double min(float a, double b) {
  return std::fmin(double(a), b);
}
inline double max(float a, double b) {
  return std::fmax(double(a), b);
}
inline double min(double a, float b) {
  return std::fmin(a, double(b));
}
inline double max(double a, float b) {
  return std::fmax(a, double(b));
}

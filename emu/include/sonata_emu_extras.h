#pragma once
// Device functions sonata's kernels use that the emulator's drop-in headers do not declare
// (yet): owned by the integration (emu-integrate), to be absorbed into cuda_runtime.h /
// cuda_fp16.h / cuda_bf16.h by their owners. Force-included into every kernel source (*.cu)
// of the emulated build (cmake/SonataCuda.cmake, sonata_cuda_sources).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

// CUDA declares its math functions at global scope with float overloads (::log(float) is
// logf), and the classification functions (isnan, isinf, isfinite): libstdc++'s <math.h>
// brings std's overloads there. With <cmath> alone ::log(float) computes in double.
#include <math.h>

#include <cstdint>
#include <cstring>

// CUDA's integer and floating-point min/max overloads at global scope
// (crt/math_functions.hpp).
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

// atomicAdd on half types (sm_70 for __half, sm_80 for __nv_bfloat16): a compare-and-swap
// loop on the 16 bits, each sum rounded once to the half type as the card's is.
namespace sonata::emu::extras {
template <typename H>
inline H atomic_add_half(H* address, H value) {
  static_assert(sizeof(H) == sizeof(uint16_t));
  uint16_t* bits = reinterpret_cast<uint16_t*>(address);
  uint16_t old = __atomic_load_n(bits, __ATOMIC_RELAXED);
  for (;;) {
    H current;
    std::memcpy(static_cast<void*>(&current), &old, sizeof(H));
    const H next = __hadd(current, value);
    uint16_t desired;
    std::memcpy(&desired, static_cast<const void*>(&next), sizeof(H));
    if (__atomic_compare_exchange_n(bits, &old, desired, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
      return current;
  }
}
}  // namespace sonata::emu::extras
inline __half atomicAdd(__half* address, __half value) {
  return sonata::emu::extras::atomic_add_half(address, value);
}
inline __nv_bfloat16 atomicAdd(__nv_bfloat16* address, __nv_bfloat16 value) {
  return sonata::emu::extras::atomic_add_half(address, value);
}

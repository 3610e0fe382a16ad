#pragma once
// One kernel file, compiled once per CPU capability (kernels/CMakeLists.txt compiles
// kernels/cpu/X.cpp as it is, the baseline, and again through generated files that define
// SONATA_CPU_CAPABILITY 1 (avx2) and 2 (avx512) before including it). The file's kernels sit
// between SONATA_CPU_BEGIN and SONATA_CPU_END, which open the namespace
// sonata::kernels::cpu::cap_baseline / cap_avx2 / cap_avx512 and, for the wide ones, a
// `#pragma GCC target` region: only the functions defined there (their lambdas, templates
// and OpenMP bodies included) are compiled for AVX2 or AVX-512.
//
// Why a target region and not -mavx2 on the whole file: every inline function and template
// of the headers that a file instantiates out of line (std::vector's growth, fast_math.h if
// not inlined, sonata::str) is emitted as a weak symbol, and the linker keeps one copy of
// each for the whole program. Compiled with -mavx512f, that copy may be the one the baseline
// code calls, and the binary dies with an illegal instruction on an AVX2 machine. Headers
// included before SONATA_CPU_BEGIN keep the baseline target, so their out-of-line copies are
// baseline everywhere; GCC still inlines them into the wide functions (a baseline function
// may be inlined into one whose instruction set is a superset) and vectorises them there.
// tests/tools/check_cpu_isa.py checks the objects and the linked binaries for it.
// One trap stays: GCC gives a vector_size type the alignment of the ISA in effect where it is
// asked, so a header template (std::vector's allocator) sees a region's 64-byte vector type
// as 16-byte aligned. Such types need an explicit aligned() (kernels/cpu/stft.cpp's V).
//
// The baseline compile (SONATA_CPU_CAPABILITY 0) also holds the public entry points, under
// `#if SONATA_CPU_ENTRY_POINTS`: each calls its capability's copy through SONATA_CPU_CALL.
#include "kernels/cpu/capability.h"

#ifndef SONATA_CPU_CAPABILITY
#define SONATA_CPU_CAPABILITY 0
#endif
#define SONATA_CPU_ENTRY_POINTS (SONATA_CPU_CAPABILITY == 0)

// clang-format off
#define SONATA_CPU_PRAGMA(text) _Pragma(#text)
#if SONATA_CPU_CAPABILITY == 0
#define SONATA_CPU_NS cap_baseline
#define SONATA_CPU_TARGET_PUSH
#define SONATA_CPU_TARGET_POP
#elif SONATA_CPU_CAPABILITY == 1 && defined(__clang__)
// clang applies the attribute to the region's functions but not to its OpenMP bodies (they
// stay baseline there: correct, slower).
#define SONATA_CPU_NS cap_avx2
#define SONATA_CPU_TARGET_PUSH SONATA_CPU_PRAGMA(clang attribute push(__attribute__((target("avx2,fma,f16c"))), apply_to = function))
#define SONATA_CPU_TARGET_POP SONATA_CPU_PRAGMA(clang attribute pop)
#elif SONATA_CPU_CAPABILITY == 1
#define SONATA_CPU_NS cap_avx2
#define SONATA_CPU_TARGET_PUSH SONATA_CPU_PRAGMA(GCC push_options) SONATA_CPU_PRAGMA(GCC target("avx2,fma,f16c"))
#define SONATA_CPU_TARGET_POP SONATA_CPU_PRAGMA(GCC pop_options)
#elif SONATA_CPU_CAPABILITY == 2 && defined(__clang__)
#define SONATA_CPU_NS cap_avx512
#define SONATA_CPU_TARGET_PUSH SONATA_CPU_PRAGMA(clang attribute push(__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma,f16c"))), apply_to = function))
#define SONATA_CPU_TARGET_POP SONATA_CPU_PRAGMA(clang attribute pop)
#elif SONATA_CPU_CAPABILITY == 2
#define SONATA_CPU_NS cap_avx512
#define SONATA_CPU_TARGET_PUSH SONATA_CPU_PRAGMA(GCC push_options) SONATA_CPU_PRAGMA(GCC target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma,f16c"))
#define SONATA_CPU_TARGET_POP SONATA_CPU_PRAGMA(GCC pop_options)
#else
#error "SONATA_CPU_CAPABILITY: 0 (baseline), 1 (avx2) or 2 (avx512)"
#endif
// clang-format on

#define SONATA_CPU_BEGIN SONATA_CPU_TARGET_PUSH namespace sonata::kernels::cpu::SONATA_CPU_NS {
#define SONATA_CPU_END \
  }                    \
  SONATA_CPU_TARGET_POP

// Entry points (inside namespace sonata::kernels::cpu): SONATA_CPU_DECLARE(f) declares f in
// each capability namespace with the type of the public declaration of f (the header's), and
// SONATA_CPU_CALL(f) is the active capability's f. SONATA_CPU_FOR_EACH_NS(m) expands
// m(cap_baseline) m(cap_avx2) m(cap_avx512), for declarations the two cannot make.
#if defined(__x86_64__) && !defined(SONATA_CPU_BASELINE_ONLY)
#define SONATA_CPU_FOR_EACH_NS(m) m(cap_baseline) m(cap_avx2) m(cap_avx512)
#define SONATA_CPU_DECLARE_AS(name, ...) \
  namespace cap_baseline {               \
  __VA_ARGS__ name;                      \
  }                                      \
  namespace cap_avx2 {                   \
  __VA_ARGS__ name;                      \
  }                                      \
  namespace cap_avx512 {                 \
  __VA_ARGS__ name;                      \
  }
#define SONATA_CPU_CALL(name) \
  (::sonata::kernels::cpu::pick_variant(&cap_baseline::name, &cap_avx2::name, &cap_avx512::name))
#else
#define SONATA_CPU_FOR_EACH_NS(m) m(cap_baseline)
#define SONATA_CPU_DECLARE_AS(name, ...) \
  namespace cap_baseline {               \
  __VA_ARGS__ name;                      \
  }
#define SONATA_CPU_CALL(name) (&cap_baseline::name)
#endif
#define SONATA_CPU_DECLARE(name) SONATA_CPU_DECLARE_AS(name, decltype(::sonata::kernels::cpu::name))

namespace sonata::kernels::cpu {

template <typename F>
F* pick_variant(F* baseline, F* avx2, F* avx512) {
  switch (active_capability()) {
    case Capability::avx512:
      return avx512;
    case Capability::avx2:
      return avx2;
    default:
      return baseline;
  }
}

}  // namespace sonata::kernels::cpu

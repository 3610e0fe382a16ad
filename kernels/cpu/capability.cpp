#include "kernels/cpu/capability.h"

#include <atomic>
#include <cstdint>
#include <cstdlib>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include "base/error.h"

namespace sonata::kernels::cpu {
namespace {

constexpr const char* kNames[kCapabilityCount] = {"baseline", "avx2", "avx512"};
constexpr const char* kVariable = "SONATA_CPU_CAPABILITY";

#if defined(__x86_64__) && !defined(SONATA_CPU_BASELINE_ONLY)
// XCR0, the register state the OS saves on a context switch: a CPU with AVX whose OS does not
// save the ymm (or zmm) halves must not use them, whatever cpuid says.
uint64_t saved_state() {
  uint32_t eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx) || !(ecx & (1u << 27))) return 0;  // OSXSAVE
  uint32_t low = 0, high = 0;
  __asm__("xgetbv" : "=a"(low), "=d"(high) : "c"(0));
  return (uint64_t(high) << 32) | low;
}

Capability detect() {
  uint32_t eax = 0, ebx = 0, ecx1 = 0, edx = 0;
  if (!__get_cpuid(1, &eax, &ebx, &ecx1, &edx)) return Capability::baseline;
  uint32_t ebx7 = 0, ecx7 = 0;
  if (!__get_cpuid_count(7, 0, &eax, &ebx7, &ecx7, &edx)) return Capability::baseline;
  const uint64_t state = saved_state();
  const bool fma = ecx1 & (1u << 12), avx = ecx1 & (1u << 28), f16c = ecx1 & (1u << 29);
  const bool avx2 = ebx7 & (1u << 5);
  const bool ymm_saved = (state & 0x6) == 0x6;  // SSE and AVX state
  if (!(avx && avx2 && fma && f16c && ymm_saved)) return Capability::baseline;
  const bool avx512 = (ebx7 & (1u << 16)) && (ebx7 & (1u << 17)) &&  // F, DQ
                      (ebx7 & (1u << 30)) && (ebx7 & (1u << 31));    // BW, VL
  const bool zmm_saved = (state & 0xe6) == 0xe6;  // + opmask, upper zmm0-15, zmm16-31
  return avx512 && zmm_saved ? Capability::avx512 : Capability::avx2;
}
#else
// Other architectures (and -DSONATA_CPU_VARIANTS=OFF) build the baseline kernels alone.
Capability detect() {
  return Capability::baseline;
}
#endif

// From SONATA_CPU_CAPABILITY, or the best; once per process. A bad setting throws each time
// it is asked for (a function-local static's initialisation is retried after a throw).
Capability chosen() {
  static const Capability capability =
      capability_from_setting(std::getenv(kVariable), best_capability());
  return capability;
}

// "baseline, avx2" for avx2.
std::string names_up_to(Capability best) {
  std::string names;
  for (int i = 0; i <= int(best); ++i) names += std::string(i ? ", " : "") + kNames[i];
  return names;
}

// A ScopedCapability's, or -1.
std::atomic<int> forced{-1};

}  // namespace

Capability capability_from_setting(const char* setting, Capability best) {
  if (!setting || !*setting) return best;
  const std::optional<Capability> asked = parse_capability(setting);
  if (!asked)
    throw Error(
        str(kVariable, "=", setting, " is not a CPU capability (use baseline, avx2 or avx512)"));
  if (int(*asked) > int(best))
    throw Error(str(kVariable, "=", setting, " asks for kernels this CPU cannot run (it supports ",
                    names_up_to(best), ")"));
  return *asked;
}

const char* capability_name(Capability capability) {
  return kNames[int(capability)];
}

std::optional<Capability> parse_capability(std::string_view name) {
  for (int i = 0; i < kCapabilityCount; ++i)
    if (name == kNames[i]) return Capability(i);
  return std::nullopt;
}

Capability best_capability() {
  static const Capability best = detect();
  return best;
}

bool capability_supported(Capability capability) {
  return int(capability) <= int(best_capability());
}

std::string supported_capability_names() {
  return names_up_to(best_capability());
}

Capability active_capability() {
  const int scoped = forced.load(std::memory_order_relaxed);
  return scoped >= 0 ? Capability(scoped) : chosen();
}

const char* capability_name() {
  return capability_name(active_capability());
}

ScopedCapability::ScopedCapability(Capability capability) {
  SONATA_CHECK(capability_supported(capability), "ScopedCapability: this CPU cannot run the ",
               capability_name(capability), " kernels (it supports ", supported_capability_names(),
               ")");
  previous_ = forced.exchange(int(capability));
}

ScopedCapability::~ScopedCapability() {
  forced.store(previous_);
}

}  // namespace sonata::kernels::cpu

#pragma once
// The CPU capability the hand-written kernels run at: one of the instruction-set levels each
// dispatched kernel file is compiled for (kernels/cpu/capability_region.h), chosen once from
// cpuid (and the OS's saved register state) at first use, or from SONATA_CPU_CAPABILITY
// (baseline, avx2 or avx512, as PyTorch's ATEN_CPU_CAPABILITY). One binary then runs on any
// x86-64 at the speed of the CPU it runs on, instead of -march=native's "illegal instruction"
// on an older one.
#include <optional>
#include <string>
#include <string_view>

namespace sonata::kernels::cpu {

// baseline: the build's own flags (x86-64-v2 by default, or the compiler's default);
// avx2: + AVX2, FMA, F16C (Haswell, Zen 1 and later); avx512: + AVX-512 F, BW, DQ, VL
// (Skylake-SP, Ice Lake, Sapphire Rapids, Zen 4 and later).
enum class Capability { baseline = 0, avx2 = 1, avx512 = 2 };
inline constexpr int kCapabilityCount = 3;

const char* capability_name(Capability capability);
// "baseline", "avx2", "avx512"; nullopt for anything else.
std::optional<Capability> parse_capability(std::string_view name);

// Whether this build has the capability's kernels and this CPU and OS can run them.
bool capability_supported(Capability capability);
// The best capability supported here.
Capability best_capability();
// The supported capabilities' names, lowest first ("baseline, avx2, avx512").
std::string supported_capability_names();

// What a SONATA_CPU_CAPABILITY setting (null or empty: unset) selects on a CPU whose best
// capability is `best`; throws sonata::Error naming the variable for a name that is not a
// capability or one above `best`.
Capability capability_from_setting(const char* setting, Capability best);

// The capability the kernels run at: a ScopedCapability's if one is alive, else
// SONATA_CPU_CAPABILITY's if set, else the best one. Throws sonata::Error naming the
// variable when SONATA_CPU_CAPABILITY is not a capability or not one this CPU supports.
Capability active_capability();
// capability_name(active_capability()): for the trainer's start line and benchmark JSON.
const char* capability_name();

// Forces a capability within a scope (tests run each kernel at every capability the CPU
// has); process-wide, not nestable across threads. Throws sonata::Error when unsupported.
class ScopedCapability {
 public:
  explicit ScopedCapability(Capability capability);
  ~ScopedCapability();
  ScopedCapability(const ScopedCapability&) = delete;
  ScopedCapability& operator=(const ScopedCapability&) = delete;

 private:
  int previous_;
};

}  // namespace sonata::kernels::cpu

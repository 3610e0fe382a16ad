// The CPU capability dispatch (kernels/cpu/capability.h): what SONATA_CPU_CAPABILITY may say,
// what cpuid gives, and that forcing a capability changes which kernel copy runs.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <cstring>
#include <string>

#include "base/error.h"
#include "kernels/cpu/capability.h"
#include "kernels/cpu/gemm_packed.h"

using namespace sonata;
using namespace sonata::kernels;
using namespace sonata::kernels::cpu;

TEST_CASE("CPU capability names round-trip and nothing else parses", "[ops][cpu_capability]") {
  for (const Capability c : {Capability::baseline, Capability::avx2, Capability::avx512})
    CHECK(parse_capability(capability_name(c)) == c);
  CHECK_FALSE(parse_capability("AVX2"));
  CHECK_FALSE(parse_capability("default"));
  CHECK_FALSE(parse_capability(""));
}

TEST_CASE("SONATA_CPU_CAPABILITY: unset picks the best, a bad or unsupported value is one error",
          "[ops][cpu_capability]") {
  CHECK(capability_from_setting(nullptr, Capability::avx2) == Capability::avx2);
  CHECK(capability_from_setting("", Capability::avx512) == Capability::avx512);
  CHECK(capability_from_setting("baseline", Capability::avx512) == Capability::baseline);
  CHECK(capability_from_setting("avx2", Capability::avx2) == Capability::avx2);
  try {
    capability_from_setting("avx1024", Capability::avx512);
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()) ==
          "SONATA_CPU_CAPABILITY=avx1024 is not a CPU capability (use baseline, avx2 or avx512)");
  }
  try {
    capability_from_setting("avx512", Capability::avx2);
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()) ==
          "SONATA_CPU_CAPABILITY=avx512 asks for kernels this CPU cannot run (it supports "
          "baseline, avx2)");
  }
}

TEST_CASE("the detected CPU capability agrees with the compiler's cpuid", "[ops][cpu_capability]") {
  const Capability best = best_capability();
  CHECK(capability_supported(Capability::baseline));
  CHECK(capability_supported(best));
#if defined(__x86_64__)
  // libgcc's __builtin_cpu_supports also checks that the OS saves the registers (XGETBV).
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  CHECK((best >= Capability::avx2) == avx2);
  CHECK((best == Capability::avx512) == avx512);
#else
  CHECK(best == Capability::baseline);
#endif
  INFO("supported: " << supported_capability_names());
  CHECK(supported_capability_names().rfind("baseline", 0) == 0);
}

TEST_CASE("a forced capability picks that capability's kernels", "[ops][cpu_capability]") {
  GemmShape large;
  large.m = 64, large.n = 64, large.k = 256;
  for (const Capability c : {Capability::baseline, Capability::avx2, Capability::avx512}) {
    if (!capability_supported(c)) {
      CHECK_THROWS_AS(ScopedCapability(c), Error);
      continue;
    }
    const Capability before = active_capability();
    {
      const ScopedCapability scoped(c);
      CHECK(active_capability() == c);
      CHECK(std::string(capability_name()) == capability_name(c));
      // The baseline has no packed sgemm (OpenBLAS keeps the products); avx2 and avx512 do.
      const char* packed = std::getenv("SONATA_PACKED_SGEMM");
      if (!packed || std::strcmp(packed, "0") != 0)
        CHECK(packed_sgemm_applies(large) == (c != Capability::baseline));
    }
    CHECK(active_capability() == before);
  }
}

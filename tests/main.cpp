#include <cstdio>
#include <cstdlib>

#include "kernels/cpu/capability.h"
#include "tests/support/catch_runner.h"

int main(int argc, char** argv) {
  // The per-capability ctest entries (tests/CMakeLists.txt) set SONATA_CPU_CAPABILITY: on a
  // CPU without that capability they report themselves skipped (77) instead of failing.
  using namespace sonata::kernels::cpu;
  if (const char* asked = std::getenv("SONATA_CPU_CAPABILITY"); asked && *asked) {
    const auto capability = parse_capability(asked);
    if (capability && !capability_supported(*capability)) {
      std::printf("SONATA_CPU_CAPABILITY=%s: this CPU supports %s; skipped\n", asked,
                  supported_capability_names().c_str());
      return 77;
    }
  }
  return sonata::testing::run_catch_session(argc, argv);
}

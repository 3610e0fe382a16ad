// Catch2's implementation (v2 is one header), compiled once per build for every test
// executable: each of the six mains used to compile it itself, about 18 s of a CI core each
// per build.
#define CATCH_CONFIG_RUNNER
#include "tests/support/catch_runner.h"

#include <catch2/catch.hpp>

namespace sonata::testing {
int run_catch_session(int argc, char** argv) {
  return Catch::Session().run(argc, argv);
}
}  // namespace sonata::testing

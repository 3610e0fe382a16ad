// Runs the CUDA parity tests when a device is present. Without one, listing still works
// (ctest discovers the cases at build time) and running exits 77: ctest's SKIP_RETURN_CODE.

#include <cstring>
#include <iostream>

#include "base/math_mode.h"
#include "engine/device.h"
#include "tests/support/catch_runner.h"

int main(int argc, char** argv) {
  bool listing = false;
  for (int i = 1; i < argc; ++i)
    listing = listing || std::strncmp(argv[i], "--list", 6) == 0 || std::strcmp(argv[i], "-l") == 0;
  if (!listing && !sonata::cuda_available()) {
    std::cout << "SKIPPED: " << sonata::cuda_unavailable_reason() << "\n";
    return 77;
  }
  // The parity tests compare f32 with the CPU at fp32 tolerances, so TF32 (on for
  // convolutions by default) is off unless a test turns it on (tests/cuda/test_cuda_tf32.cpp).
  sonata::set_tf32_mode(sonata::Tf32Mode::off);
  return sonata::testing::run_catch_session(argc, argv);
}

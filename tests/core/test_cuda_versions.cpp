// The trainer's driver check with injected versions (engine/cuda_versions.h): a driver older
// than the runtime's major version is refused in one sentence naming the driver needed; minor
// version compatibility, no driver and a CPU build are not refusals.
#include <catch2/catch.hpp>

#include "engine/cuda_versions.h"

using namespace sonata;

TEST_CASE("the trainer refuses a driver too old for the CUDA runtime", "[core][device]") {
  CHECK(cuda_version_name(13000) == "13.0");
  CHECK(cuda_version_name(12080) == "12.8");
  CHECK(driver_too_old({12080, 13000}) ==
        "the NVIDIA driver supports CUDA up to 12.8 but this build uses the CUDA 13.0 runtime: "
        "install driver R580 or newer, or build with a CUDA 12.x toolkit (README, GPU)");
  CHECK(driver_too_old({11080, 12040}).find("install driver R525 or newer") != std::string::npos);
  CHECK(driver_too_old({13000, 13000}).empty());
  CHECK(driver_too_old({13010, 13000}).empty());  // newer driver
  CHECK(driver_too_old({12020, 12080}).empty());  // minor version compatibility
  CHECK(driver_too_old({0, 13000}).empty());      // no driver: no GPU, said elsewhere
  CHECK(driver_too_old({12080, 0}).empty());      // a CPU build
  CHECK(describe_cuda_versions({12080, 13000}) ==
        "CUDA driver 12.8 (supports CUDA up to 12.8), runtime 13.0");
  CHECK(describe_cuda_versions({0, 0}) == "no CUDA runtime (a CPU build)");
}

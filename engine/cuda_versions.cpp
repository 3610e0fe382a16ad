#include "engine/cuda_versions.h"

#include "base/error.h"

#if SONATA_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

namespace sonata {
namespace {

// The oldest Linux driver branch for each CUDA major version (CUDA Toolkit release notes,
// "CUDA Toolkit and Minimum Required Driver Version for CUDA Minor Version Compatibility").
const char* minimum_driver(int major) {
  switch (major) {
    case 11:
      return "R450";
    case 12:
      return "R525";
    case 13:
      return "R580";
    default:
      return nullptr;
  }
}

}  // namespace

CudaVersions cuda_versions() {
  CudaVersions versions;
#if SONATA_WITH_CUDA
  // Neither call creates a context; a failure leaves 0 (and its last error cleared).
  if (cudaDriverGetVersion(&versions.driver) != cudaSuccess) versions.driver = 0;
  if (cudaRuntimeGetVersion(&versions.runtime) != cudaSuccess) versions.runtime = 0;
  cudaGetLastError();
#endif
  return versions;
}

std::string cuda_version_name(int version) {
  return str(version / 1000, ".", (version % 1000) / 10);
}

std::string describe_cuda_versions(const CudaVersions& versions) {
  if (versions.runtime == 0) return "no CUDA runtime (a CPU build)";
  const std::string runtime = str("runtime ", cuda_version_name(versions.runtime));
  if (versions.driver == 0) return str("no CUDA driver, ", runtime);
  return str("CUDA driver ", cuda_version_name(versions.driver), " (supports CUDA up to ",
             cuda_version_name(versions.driver), "), ", runtime);
}

std::string driver_too_old(const CudaVersions& versions) {
  if (versions.runtime == 0 || versions.driver == 0) return "";
  const int driver_major = versions.driver / 1000, runtime_major = versions.runtime / 1000;
  if (driver_major >= runtime_major) return "";
  const char* needed = minimum_driver(runtime_major);
  return str("the NVIDIA driver supports CUDA up to ", cuda_version_name(versions.driver),
             " but this build uses the CUDA ", cuda_version_name(versions.runtime),
             " runtime: install driver ", needed ? needed : "a release for that CUDA version",
             needed ? " or newer" : "", ", or build with a CUDA ", driver_major,
             ".x toolkit (README, GPU)");
}

}  // namespace sonata

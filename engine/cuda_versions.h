#pragma once
// Which CUDA driver and runtime the process found, and whether they can work together.
// A CUDA build runs only on a driver that supports its runtime's major version (CUDA 13 needs
// driver R580 or newer, CUDA 12 R525, CUDA 11 R450; within a major version the CUDA minor
// version compatibility lets an older driver run a newer runtime). Otherwise every CUDA call
// fails with cudaErrorInsufficientDriver, which would read as "no GPU" and quietly train on
// the CPU: the trainer refuses instead, in one sentence.
#include <string>

namespace sonata {

struct CudaVersions {
  int driver = 0;   // cudaDriverGetVersion: the newest CUDA the driver supports; 0: no driver
  int runtime = 0;  // cudaRuntimeGetVersion: the CUDA this build links; 0: a CPU build
};

// The process's versions: the runtime's two queries in CUDA builds, {0, 0} otherwise.
CudaVersions cuda_versions();

// 13000 -> "13.0", 12080 -> "12.8".
std::string cuda_version_name(int version);

// "CUDA driver 12.8 (supports CUDA up to 12.8), runtime 13.0", for the trainer's log.
std::string describe_cuda_versions(const CudaVersions& versions);

// Empty when the driver can run the runtime (or there is no runtime or no driver: then
// there is simply no GPU); else one sentence saying which driver is needed.
std::string driver_too_old(const CudaVersions& versions);

}  // namespace sonata

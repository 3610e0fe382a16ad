#pragma once
// NVTX range for Nsight: every kernel launcher and every training phase opens one.
// Without CUDA it compiles to nothing.

namespace sonata {

class NvtxRange {
 public:
  explicit NvtxRange(const char* name);
  ~NvtxRange();
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;
};

// cudaProfilerStart / cudaProfilerStop: what `nsys profile --capture-range=cudaProfilerApi`
// and `ncu --profile-from-start off` wait for. Return false (doing nothing) in a build
// without CUDA.
bool profiler_capture_start();
bool profiler_capture_stop();

}  // namespace sonata

#define SONATA_NVTX_CONCAT_(a, b) a##b
#define SONATA_NVTX_CONCAT(a, b) SONATA_NVTX_CONCAT_(a, b)
#define SONATA_NVTX_RANGE(name) ::sonata::NvtxRange SONATA_NVTX_CONCAT(sonata_nvtx_, __LINE__)(name)

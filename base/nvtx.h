#pragma once
// NVTX range for Nsight: every kernel launcher and every training phase opens one. Without
// CUDA it pushes nothing to NVTX.
//
// The same ranges double as a host-side profiler (range_times_enable): each range's wall
// time is summed per name, inclusive and self (less the ranges opened inside it on the same
// thread). On the CPU backend that is where a step's time goes, op by op; on CUDA it is
// only launch overhead, since kernels run asynchronously (use Nsight there).
#include <cstdint>
#include <string>
#include <vector>

namespace sonata {

class NvtxRange {
 public:
  explicit NvtxRange(const char* name);
  ~NvtxRange();
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;

 private:
  const char* name_;
  int64_t start_ns_ = -1;  // -1: the host timer was off when the range opened
};

// cudaProfilerStart / cudaProfilerStop: what `nsys profile --capture-range=cudaProfilerApi`
// and `ncu --profile-from-start off` wait for. Return false (doing nothing) in a build
// without CUDA.
bool profiler_capture_start();
bool profiler_capture_stop();

struct RangeTime {
  std::string name;
  int64_t calls = 0;
  double inclusive_s = 0, self_s = 0;
};

// Starts (true) or stops summing range times; starting clears the sums.
void range_times_enable(bool on);
// The sums so far, the largest self time first.
std::vector<RangeTime> range_times();

}  // namespace sonata

#define SONATA_NVTX_CONCAT_(a, b) a##b
#define SONATA_NVTX_CONCAT(a, b) SONATA_NVTX_CONCAT_(a, b)
#define SONATA_NVTX_RANGE(name) ::sonata::NvtxRange SONATA_NVTX_CONCAT(sonata_nvtx_, __LINE__)(name)

#include "base/nvtx.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>

#if SONATA_WITH_CUDA
#include <cuda_profiler_api.h>
#include <cuda_runtime_api.h>
#include <nvtx3/nvToolsExt.h>
#endif

namespace sonata {
namespace {

std::atomic<bool> timing{false};

struct Sums {
  int64_t calls = 0, inclusive_ns = 0, self_ns = 0;
};

// Keyed by the name's text, not its pointer: the same literal may live in several objects.
std::mutex sums_mutex;
std::map<std::string, Sums>& sums() {
  static std::map<std::string, Sums> table;
  return table;
}

// Time spent in ranges opened inside each open range of this thread, innermost last.
thread_local std::vector<int64_t> child_ns;

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void push_range(const char* name) {
#if SONATA_WITH_CUDA
  nvtxRangePushA(name);
#else
  (void)name;
#endif
}
void pop_range() {
#if SONATA_WITH_CUDA
  nvtxRangePop();
#endif
}

}  // namespace

NvtxRange::NvtxRange(const char* name) : name_(name) {
  push_range(name);
  if (timing.load(std::memory_order_relaxed)) {
    child_ns.push_back(0);
    start_ns_ = now_ns();
  }
}

NvtxRange::~NvtxRange() {
  pop_range();
  // A range opened before the timer started (or the stack cleared under it) adds nothing.
  if (start_ns_ < 0 || child_ns.empty()) return;
  const int64_t inclusive = now_ns() - start_ns_;
  const int64_t children = child_ns.back();
  child_ns.pop_back();
  if (!child_ns.empty()) child_ns.back() += inclusive;
  if (!timing.load(std::memory_order_relaxed)) return;
  const std::lock_guard<std::mutex> lock(sums_mutex);
  Sums& s = sums()[name_];
  s.calls += 1;
  s.inclusive_ns += inclusive;
  s.self_ns += inclusive - children;
}

void range_times_enable(bool on) {
  const std::lock_guard<std::mutex> lock(sums_mutex);
  if (on) sums().clear();
  timing.store(on);
}

std::vector<RangeTime> range_times() {
  std::vector<RangeTime> out;
  {
    const std::lock_guard<std::mutex> lock(sums_mutex);
    for (const auto& [name, s] : sums())
      out.push_back({name, s.calls, double(s.inclusive_ns) * 1e-9, double(s.self_ns) * 1e-9});
  }
  std::sort(out.begin(), out.end(),
            [](const RangeTime& a, const RangeTime& b) { return a.self_s > b.self_s; });
  return out;
}

#if SONATA_WITH_CUDA
// Errors are ignored on purpose: without a device the calls fail harmlessly, and profiling
// must never stop a training run. A failure is cleared so that the next launch check does not
// report it as its own.
bool profiler_capture_start() {
  const bool started = cudaProfilerStart() == cudaSuccess;
  if (!started) cudaGetLastError();
  return started;
}
bool profiler_capture_stop() {
  const bool stopped = cudaProfilerStop() == cudaSuccess;
  if (!stopped) cudaGetLastError();
  return stopped;
}
#else
bool profiler_capture_start() {
  return false;
}
bool profiler_capture_stop() {
  return false;
}
#endif

}  // namespace sonata

#include "bench/fma_peak.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <vector>

#include "kernels/cpu/capability.h"
#include "kernels/cpu/fma_peak.h"

namespace sonata::bench {
namespace {

using kernels::cpu::Capability;

// Seconds in which `threads` threads ran the chains of `iterations` rounds each: from the
// first thread's start to the last one's end, every thread starting after a barrier (so that
// waking the team, which is not the cores' peak, is mostly outside). A span that holds all
// the work never overstates the rate, even when the threads did not run side by side.
double region_seconds(int threads, int64_t iterations) {
  using Clock = std::chrono::steady_clock;
  std::vector<Clock::time_point> starts(static_cast<size_t>(threads)), ends(starts);
  float sink = 0;
#pragma omp parallel num_threads(threads) reduction(+ : sink)
  {
#pragma omp barrier
    const size_t me = size_t(omp_get_thread_num());
    starts[me] = Clock::now();
    sink += kernels::cpu::fma_chains(iterations);
    ends[me] = Clock::now();
  }
  // The sum is printed nowhere; reading it keeps the chains' work alive.
  if (sink == -1.0f) std::fprintf(stderr, "fma_peak: impossible sum\n");
  const std::chrono::duration<double> span =
      *std::max_element(ends.begin(), ends.end()) - *std::min_element(starts.begin(), starts.end());
  return span.count();
}

double measure(int threads, double seconds_per_thread, int trials) {
  // Iterations for the wanted duration, from one thread's rate on a short run.
  const int64_t probe = 1 << 16;
  region_seconds(1, probe);  // wakes the core and its vector units
  const double probe_seconds = std::max(region_seconds(1, probe), 1e-7);
  const int64_t iterations =
      std::max<int64_t>(probe, int64_t(double(probe) * seconds_per_thread / probe_seconds));
  // One untimed region of the whole team first: its threads are created (or woken from
  // sleep) there, which a 1 ms quick trial would otherwise count, reporting two threads at
  // one thread's rate.
  region_seconds(threads, iterations);
  double best = 1e30;
  for (int trial = 0; trial < trials; ++trial)
    best = std::min(best, region_seconds(threads, iterations));
  const double multiply_adds =
      double(threads) * double(iterations) * double(kernels::cpu::fma_chains_per_iteration());
  return multiply_adds / best / 1e9;
}

}  // namespace

std::vector<FmaPeak> measure_fma_peaks(bool quick) {
  std::vector<int> team{1, omp_get_max_threads(), omp_get_num_procs()};
  std::sort(team.begin(), team.end());
  team.erase(std::unique(team.begin(), team.end()), team.end());
  std::vector<FmaPeak> peaks;
  for (int c = 0; c < kernels::cpu::kCapabilityCount; ++c) {
    const Capability capability = Capability(c);
    if (!kernels::cpu::capability_supported(capability)) continue;
    const kernels::cpu::ScopedCapability scoped(capability);
    for (int threads : team)
      peaks.push_back({kernels::cpu::capability_name(capability), threads,
                       quick ? measure(threads, 0.001, 5) : measure(threads, 0.002, 50)});
  }
  return peaks;
}

double fma_peak_gfma(const std::vector<FmaPeak>& peaks, const std::string& capability,
                     int threads) {
  for (const FmaPeak& peak : peaks)
    if (peak.capability == capability && peak.threads == threads) return peak.gfma_per_s;
  return 0;
}

std::string cpu_model_name() {
  std::ifstream info("/proc/cpuinfo");
  std::string line;
  while (std::getline(info, line))
    if (line.rfind("model name", 0) == 0) {
      const size_t colon = line.find(':');
      if (colon == std::string::npos) break;
      const size_t first = line.find_first_not_of(" \t", colon + 1);
      return first == std::string::npos ? "?" : line.substr(first);
    }
  return "?";
}

void print_fma_peaks(const std::vector<FmaPeak>& peaks) {
  // The model name is the kernel's text: a quote or backslash in it would break the line.
  std::string model = cpu_model_name();
  std::replace_if(
      model.begin(), model.end(), [](char c) { return c == '"' || c == '\\'; }, ' ');
  for (const FmaPeak& peak : peaks)
    std::printf(
        "{\"work\": \"fma_peak\", \"device\": \"cpu\", \"cpu_model\": \"%s\", \"threads\": %d, "
        "\"gfma_per_s\": %.4g, \"cpu_capability\": \"%s\", \"peer\": \"sonata\"}\n",
        model.c_str(), peak.threads, peak.gfma_per_s, peak.capability.c_str());
  std::fflush(stdout);
}

}  // namespace sonata::bench

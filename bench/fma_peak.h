#pragma once
// The cores' measured multiply-add peak (kernels/cpu/fma_peak.h's register-resident FMA
// chains), at each CPU capability the machine has, on one thread and on the kernels' team:
// the ceiling every CPU figure of bench_kernels and bench_models is read against, instead of
// one assumed from the clock or from twice a one-thread GEMM (two vCPUs may be hyperthreads
// of one core, and the clock may drop with both busy).
#include <string>
#include <vector>

namespace sonata::bench {

struct FmaPeak {
  std::string capability;  // "baseline", "avx2", "avx512"
  int threads = 0;
  double gfma_per_s = 0;  // multiply-adds (one per float lane) per second, in billions
};

// Every supported capability, each on 1 thread, omp_get_max_threads() (the kernels' team)
// and omp_get_num_procs() threads (the two last once when equal); each the best of 50 runs
// of about 2 ms (of 5 runs of 1 ms when `quick`: a smoke run, not a figure), each run timed
// from its first thread's start after a barrier (waking the team is not the cores' peak) to
// its last thread's end. The best of many short runs, because on a shared machine a short run is
// the likeliest to have had its cores to itself: under a load of 10 on 2 cores, runs of 50 ms gave
// half of what runs of 2 ms did, and timing the region from outside gave two threads 1.2 GFMA/s.
std::vector<FmaPeak> measure_fma_peaks(bool quick);

// The peak at `capability` on `threads` threads; 0 when it was not measured.
double fma_peak_gfma(const std::vector<FmaPeak>& peaks, const std::string& capability, int threads);

// "model name" of /proc/cpuinfo's first processor, "?" where there is none.
std::string cpu_model_name();

// One JSON line a peak: {"work": "fma_peak", "device": "cpu", "cpu_model": ..., "threads":
// ..., "gfma_per_s": ..., "cpu_capability": ..., "peer": "sonata"}.
void print_fma_peaks(const std::vector<FmaPeak>& peaks);

}  // namespace sonata::bench

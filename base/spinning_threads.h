#pragma once
// CPU training in one process: OpenMP's threads spin between parallel regions instead of
// sleeping. A training step runs hundreds of small regions (DeepSpeech2's LSTM steps, batch
// norm, the optimizer); under libgomp's default policy a worker sleeps after a short spin and
// every region then pays for waking it, which on the speech demo costs a fifth of the run
// (bench/RESULTS.md, 2026-12-07). libgomp reads OMP_WAIT_POLICY once, before main, so the
// trainer (and bench_models, which times its step) sets it and executes itself again. Not when
// the user set the policy, under a launcher (ranks may share cores, and a spinning thread takes
// a core from its neighbour), or on a GPU (the host threads mostly wait for the device there):
// the caller says whether it trains on the CPU alone.
#include <string>

namespace sonata {

// Re-executes this program with OMP_WAIT_POLICY=active when `cpu_training_alone` and the
// policy is unset; returns (leaving the policy as it is) when it need not or cannot. In the
// re-executed process it returns true, and with `verbose` says so in one line that starts
// with `program`.
bool spin_openmp_threads(const char* program, char** argv, bool cpu_training_alone, bool verbose);

// OMP_WAIT_POLICY as this process runs under it: its value, or "default" when unset.
std::string openmp_wait_policy();

}  // namespace sonata

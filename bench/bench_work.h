#pragma once
// The benchmark's workloads: each runs warm-up steps, then timed steps, and returns the
// figures that peer_torch.py (or bench/peer_ctc.py) prints for the same work, so one JSON
// line from each can be compared side by side.
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "engine/device.h"
#include "engine/nn/layer_sequence.h"

namespace sonata {

struct BenchOptions {
  std::string work;
  Device device = Device::cpu();
  std::string precision = "fp32";
  int64_t batch = 0;  // 0: the workload's default for the device
  std::string size;   // vgg19_bn: CxHxW; ds2 and ctc: frames
  int64_t target_length = 0;
  int steps = 5, warmup = 2;
  bool channels_last = false;  // vgg19_bn: NHWC convolutions
  std::string range_times;     // JSONL of host time per NVTX range over the timed steps
  bool layers = false;         // CPU: time each conv and linear pass alone (bench/layer_passes.h)
  bool quick = false;          // CPU layers: one timed call a pass (a smoke run)
  double fma_peak_gfma = 0;    // the cores' measured peak at the active capability and team
};

// Ordered (key, already-formatted JSON value) pairs.
using BenchFields = std::vector<std::pair<std::string, std::string>>;

// Times `step` over options.steps after options.warmup untimed runs, synchronising the
// device around the timed loop only, and resets the peak-memory counters after warm-up.
// Returns seconds per step.
double time_steps(const BenchOptions& options, const std::function<void()>& step);

// On the CPU: the step's multiply-adds (its conv, linear and RNN products, from running
// `layers` on `input`), its GFMA/s over `seconds` and, where the peak was measured, its share
// of it, appended to `fields`; with options.layers, each conv and linear pass's line first.
void add_step_peak_share(BenchFields& fields, const BenchOptions& options,
                         const LayerSequence& layers, const LayerValue& input, double seconds);

BenchFields bench_vgg19_bn(const BenchOptions& options);
BenchFields bench_ds2(const BenchOptions& options);
BenchFields bench_ctc(const BenchOptions& options);
BenchFields bench_mel(const BenchOptions& options);

}  // namespace sonata

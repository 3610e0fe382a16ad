#pragma once
// The kernel benchmark's parts: timing over rotated input sets, the device's ceilings, and
// one function per kernel that builds its inputs and times its forward and backward passes
// through the engine's ops (what a training step calls), as bench/peer_kernels.py times
// PyTorch's.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/dtype.h"
#include "bench/kernel_cost.h"
#include "engine/device.h"
#include "engine/tensor.h"

namespace sonata::bench {

struct KernelBenchOptions {
  Device device = Device::cpu();
  DType dtype = DType::f32;
  std::string precision = "fp32";
  bool quick = false;          // tiny sizes, one timed call: a smoke run
  std::vector<int64_t> shape;  // overrides the kernel's default sizes when not empty
  int min_sets = 3;            // input sets rotated at least
  double rotate_bytes = 0;     // the sets together exceed this (twice the last-level cache)
  int min_calls = 5;           // timed calls at least ...
  double min_seconds = 0.25;   // ... and for at least this long
};

struct Timing {
  double seconds_per_call = 0;
  int64_t calls = 0;
};

// Mean seconds per call of call(i) with i rotating over [0, sets): two untimed calls, two
// more (when options.min_seconds > 0) that size the timed run to last that long, then the
// timed run, at least options.min_calls. CUDA: timed with events on the current stream; the
// host waits only at the end of each timed run.
Timing time_rotated(const KernelBenchOptions& options, int sets,
                    const std::function<void(int)>& call);

// The copy bandwidth (CPU: a threaded memcpy; CUDA: cudaMemcpyAsync device to device) and
// the rate of a large square GEMM in options.dtype (OpenBLAS / cuBLAS through matmul), on
// every core whatever OMP_NUM_THREADS says,
// each the best of two timed runs.
Ceilings measure_ceilings(const KernelBenchOptions& options);

// The last-level cache (CPU: L3 as sysconf reports it; CUDA: L2), 0 when unknown.
double last_level_cache_bytes(Device device);

// One timed pass of one kernel: a JSON line of bench_kernels.
struct KernelResult {
  std::string kernel;  // "gemm", "conv", ...
  Pass pass = Pass::forward;
  std::string precision;
  std::string shape;  // "M=..,N=..,K=.." as peer_kernels.py spells it
  KernelCost cost;
  int sets = 0;
  Timing timing;
};

// A recorded forward whose backward can be timed again and again (retain_graph).
struct Graph {
  std::vector<Tensor> leaves;  // their gradients are dropped before each backward
  Tensor output;
  Tensor seed;  // the output's gradient; undefined for a one-element output
};
void run_backward(const Graph& graph);

// Times the forward (and backward) of one kernel: `forward(i)` runs set i without
// recording history, `record(i)` builds set i's graph. Sets come from the forward's bytes.
std::vector<KernelResult> time_kernel(const KernelBenchOptions& options, const std::string& kernel,
                                      const std::string& shape, const KernelCost& forward_cost,
                                      const KernelCost& backward_cost,
                                      const std::function<void(int)>& make_set,
                                      const std::function<void(int)>& forward,
                                      const std::function<Graph(int)>& record);

// The kernels; each picks its default sizes for the device (or options.shape).
std::vector<KernelResult> bench_gemm(const KernelBenchOptions& options);
std::vector<KernelResult> bench_conv(const KernelBenchOptions& options);
std::vector<KernelResult> bench_bn_relu(const KernelBenchOptions& options);
std::vector<KernelResult> bench_softmax_ce(const KernelBenchOptions& options);
std::vector<KernelResult> bench_lstm_step(const KernelBenchOptions& options);
std::vector<KernelResult> bench_ctc_kernel(const KernelBenchOptions& options);
std::vector<KernelResult> bench_optimizer(const KernelBenchOptions& options);

// The sizes for a kernel: options.shape when given (checked to have `count` values), else
// the quick, CUDA or CPU default.
std::vector<int64_t> kernel_sizes(const KernelBenchOptions& options, const std::string& kernel,
                                  size_t count, const std::vector<int64_t>& cpu,
                                  const std::vector<int64_t>& cuda,
                                  const std::vector<int64_t>& quick);

// Standard-normal values of `shape` in options.dtype on options.device, a leaf that
// requires its gradient when asked.
Tensor random_input(const KernelBenchOptions& options, const Shape& shape,
                    bool requires_grad = false);

// "M=2048,N=1024,K=640": the shape field, spelled as peer_kernels.py spells it.
std::string shape_text(const std::vector<std::string>& names, const std::vector<int64_t>& sizes);

// options with f32 and "fp32": kernels that run in f32 whatever the precision (CTC on
// log-probabilities, the optimizer's f32 parameters and moments).
KernelBenchOptions in_f32(const KernelBenchOptions& options);

}  // namespace sonata::bench

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>

#include "base/error.h"
#include "bench/kernel_bench.h"
#include "engine/autograd/grad_mode.h"
#include "engine/random.h"

#if SONATA_WITH_CUDA
#include "base/cuda_check.h"
#include "engine/cuda/stream.h"
#endif

namespace sonata::bench {
namespace {

// Seconds for calls first .. first + count - 1 (rotating over the sets), measured on the
// device's own clock: wall time on the CPU, events around the launches on CUDA.
double time_calls(const KernelBenchOptions& options, int sets, int64_t first, int64_t count,
                  const std::function<void(int)>& call) {
#if SONATA_WITH_CUDA
  if (options.device.is_cuda()) {
    set_cuda_device(options.device.index);
    const cudaStream_t stream = current_stream(options.device.index);
    Event start(/*timing=*/true), stop(/*timing=*/true);
    start.record(stream);
    for (int64_t i = first; i < first + count; ++i) call(int(i % sets));
    stop.record(stream);
    stop.synchronize();
    CUDA_CHECK(cudaGetLastError());
    return double(stop.elapsed_ms(start)) / 1e3;
  }
#endif
  const auto begin = std::chrono::steady_clock::now();
  for (int64_t i = first; i < first + count; ++i) call(int(i % sets));
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
}

}  // namespace

Timing time_rotated(const KernelBenchOptions& options, int sets,
                    const std::function<void(int)>& call) {
  SONATA_CHECK(sets > 0, "bench_kernels: at least one input set is needed");
  // Untimed: one call per set and two at least (allocator growth, cuDNN and cuBLAS plans,
  // and each set's first backward allocating the gradients it keeps: with 64 sets those
  // were every timed call, and a [1024, 1000] cross entropy's backward read 13 ms instead
  // of 0.7), then two more to size the timed run. The timed run continues the rotation, so
  // each call's set is the one least recently used.
  const int64_t warm_up = std::max(sets, 2);
  int64_t next = 0;
  time_calls(options, sets, next, warm_up, call);
  next += warm_up;
  int64_t calls = std::max(options.min_calls, 1);
  if (options.min_seconds > 0) {
    const double estimate = time_calls(options, sets, next, 2, call) / 2;
    next += 2;
    const double wanted = std::ceil(options.min_seconds / std::max(estimate, 1e-7));
    calls = std::max(calls, int64_t(std::min(wanted, 1e5)));
  }
  const double seconds = time_calls(options, sets, next, calls, call);
  return {seconds / double(calls), calls};
}

void run_backward(const Graph& graph) {
  for (const Tensor& leaf : graph.leaves) {
    Tensor handle = leaf;
    handle.set_grad(Tensor());
  }
  graph.output.backward(graph.seed, /*retain_graph=*/true);
}

std::vector<KernelResult> time_kernel(const KernelBenchOptions& options, const std::string& kernel,
                                      const std::string& shape, const KernelCost& forward_cost,
                                      const KernelCost& backward_cost,
                                      const std::function<void(int)>& make_set,
                                      const std::function<void(int)>& forward,
                                      const std::function<Graph(int)>& record) {
  const int sets = rotation_sets(forward_cost.bytes, options.rotate_bytes, options.min_sets);
  for (int i = 0; i < sets; ++i) make_set(i);
  std::vector<KernelResult> results;
  {
    NoGradGuard no_grad;
    results.push_back({kernel, Pass::forward, options.precision, shape, forward_cost, sets,
                       time_rotated(options, sets, forward)});
  }
  if (record) {
    std::vector<Graph> graphs;
    for (int i = 0; i < sets; ++i) graphs.push_back(record(i));
    results.push_back({kernel, Pass::backward, options.precision, shape, backward_cost, sets,
                       time_rotated(options, sets, [&](int i) { run_backward(graphs[i]); })});
  }
  return results;
}

std::vector<int64_t> kernel_sizes(const KernelBenchOptions& options, const std::string& kernel,
                                  size_t count, const std::vector<int64_t>& cpu,
                                  const std::vector<int64_t>& cuda,
                                  const std::vector<int64_t>& quick) {
  if (options.shape.empty()) return options.quick ? quick : options.device.is_cuda() ? cuda : cpu;
  SONATA_CHECK(options.shape.size() == count, "bench_kernels: --shape for ", kernel, " needs ",
               count, " sizes, got ", options.shape.size());
  for (int64_t size : options.shape)
    SONATA_CHECK(size > 0, "bench_kernels: --shape sizes must be positive, got ", size);
  return options.shape;
}

Tensor random_input(const KernelBenchOptions& options, const Shape& shape, bool requires_grad) {
  return randn(shape, TensorOptions{}.with(options.dtype).with(options.device).grad(requires_grad));
}

std::string shape_text(const std::vector<std::string>& names, const std::vector<int64_t>& sizes) {
  SONATA_CHECK(names.size() == sizes.size(), "bench_kernels: ", names.size(), " shape names for ",
               sizes.size(), " sizes");
  std::string text;
  for (size_t i = 0; i < names.size(); ++i) text += str(i ? "," : "", names[i], "=", sizes[i]);
  return text;
}

KernelBenchOptions in_f32(const KernelBenchOptions& options) {
  KernelBenchOptions f32 = options;
  f32.dtype = DType::f32;
  f32.precision = "fp32";
  return f32;
}

}  // namespace sonata::bench

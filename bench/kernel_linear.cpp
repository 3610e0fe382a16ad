// The matrix kernels: a GEMM as a Linear layer runs it, and one LSTM time step as the RNN
// layers run it (models/layers/rnn.cpp: two addmm, then the fused cell).
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "base/error.h"
#include "bench/kernel_bench.h"
#include "engine/ops.h"
#include "engine/ops/rnn_cell.h"

namespace sonata::bench {
namespace {

using Leaves = std::vector<Tensor>;

// time_kernel for a kernel whose input set is a list of leaves: `make()` builds one set,
// `run(set)` is the kernel (forward without history, or recorded for the backward), and the
// backward is seeded with a random gradient of `output_shape`.
std::vector<KernelResult> time_leaves(const KernelBenchOptions& options, const std::string& kernel,
                                      const std::string& shape, const KernelCost& forward_cost,
                                      const KernelCost& backward_cost,
                                      const std::function<Leaves()>& make,
                                      const std::function<Tensor(const Leaves&)>& run,
                                      const Shape& output_shape) {
  std::vector<Leaves> sets;
  return time_kernel(
      options, kernel, shape, forward_cost, backward_cost, [&](int) { sets.push_back(make()); },
      [&](int i) { run(sets[size_t(i)]); },
      [&](int i) {
        const Leaves& set = sets[size_t(i)];
        return Graph{set, run(set), random_input(options, output_shape)};
      });
}

}  // namespace

std::vector<KernelResult> bench_gemm(const KernelBenchOptions& options) {
  // M x K times K x N: on the CPU, DS2-small's input projection of 2048 frames (640 features
  // to 4 x 256 gates); on CUDA, a wide layer over 8192 tokens.
  const std::vector<int64_t> size =
      kernel_sizes(options, "gemm", 3, {2048, 1024, 640}, {8192, 4096, 4096}, {64, 64, 64});
  const int64_t m = size[0], n = size[1], k = size[2];
  const int64_t element = int64_t(dtype_size(options.dtype));
  return time_leaves(
      options, "gemm", shape_text({"M", "N", "K"}, size),
      gemm_cost(m, n, k, element, Pass::forward), gemm_cost(m, n, k, element, Pass::backward),
      [&] {
        return Leaves{random_input(options, {m, k}, true), random_input(options, {k, n}, true)};
      },
      [](const Leaves& ab) { return matmul(ab[0], ab[1]); }, {m, n});
}

std::vector<KernelResult> bench_lstm_step(const KernelBenchOptions& options) {
  // Batch N, input I, hidden H: DS2-small's first layer on the CPU (8 clips, 640 features,
  // 256 units); a 1024-unit layer over 64 sequences on CUDA.
  const std::vector<int64_t> size =
      kernel_sizes(options, "lstm_step", 3, {8, 640, 256}, {64, 1024, 1024}, {2, 8, 8});
  const int64_t batch = size[0], input = size[1], hidden = size[2];
  const int64_t element = int64_t(dtype_size(options.dtype));
  // Weights scaled as PyTorch initialises them (uniform in +-1/sqrt(H)), so the gates stay
  // out of saturation like a trained layer's.
  const double scale = 1.0 / std::sqrt(double(hidden));
  const auto weight = [&](const Shape& shape) {
    return (random_input(options, shape) * scale).set_requires_grad(true);
  };
  return time_leaves(
      options, "lstm_step", shape_text({"N", "I", "H"}, size),
      lstm_step_cost(batch, input, hidden, element, Pass::forward),
      lstm_step_cost(batch, input, hidden, element, Pass::backward),
      [&] {
        return Leaves{random_input(options, {batch, input}, true),
                      random_input(options, {batch, hidden}, true),
                      random_input(options, {batch, hidden}, true),
                      weight({4 * hidden, input}),
                      weight({4 * hidden, hidden}),
                      weight({4 * hidden}),
                      weight({4 * hidden})};
      },
      [](const Leaves& s) {  // x, h, c, w_ih, w_hh, b_ih, b_hh
        const Tensor gates_x = addmm(s[5], s[0], s[3].t());
        const Tensor gates_h = addmm(s[6], s[1], s[4].t());
        return lstm_cell(gates_x, gates_h, s[1], s[2]).h;
      },
      {batch, hidden});
}

}  // namespace sonata::bench

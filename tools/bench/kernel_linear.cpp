// The matrix kernels: a GEMM as a Linear layer runs it, and one LSTM time step as the RNN
// layers run it (models/layers/rnn.cpp: two addmm, then the fused cell).
#include <cmath>
#include <vector>

#include "base/error.h"
#include "engine/ops.h"
#include "engine/ops/rnn_cell.h"
#include "tools/bench/kernel_bench.h"

namespace sonata::bench {

std::vector<KernelResult> bench_gemm(const KernelBenchOptions& options) {
  // M x K times K x N: on the CPU, DS2-small's input projection of 2048 frames (640 features
  // to 4 x 256 gates); on CUDA, a wide layer over 8192 tokens.
  const std::vector<int64_t> size =
      kernel_sizes(options, "gemm", 3, {2048, 1024, 640}, {8192, 4096, 4096}, {64, 64, 64});
  const int64_t m = size[0], n = size[1], k = size[2];
  const int64_t element = int64_t(dtype_size(options.dtype));
  struct Set {
    Tensor a, b;
  };
  std::vector<Set> sets;
  return time_kernel(
      options, "gemm", shape_text({"M", "N", "K"}, size),
      gemm_cost(m, n, k, element, Pass::forward), gemm_cost(m, n, k, element, Pass::backward),
      [&](int) {
        sets.push_back({random_input(options, {m, k}, true), random_input(options, {k, n}, true)});
      },
      [&](int i) { matmul(sets[size_t(i)].a, sets[size_t(i)].b); },
      [&](int i) {
        const Set& set = sets[size_t(i)];
        return Graph{{set.a, set.b}, matmul(set.a, set.b), random_input(options, {m, n})};
      });
}

std::vector<KernelResult> bench_lstm_step(const KernelBenchOptions& options) {
  // Batch N, input I, hidden H: DS2-small's first layer on the CPU (8 clips, 640 features,
  // 256 units); a 1024-unit layer over 64 sequences on CUDA.
  const std::vector<int64_t> size =
      kernel_sizes(options, "lstm_step", 3, {8, 640, 256}, {64, 1024, 1024}, {2, 8, 8});
  const int64_t batch = size[0], input = size[1], hidden = size[2];
  const int64_t element = int64_t(dtype_size(options.dtype));
  struct Set {
    Tensor x, h, c, w_ih, w_hh, b_ih, b_hh;
  };
  std::vector<Set> sets;
  const auto step = [](const Set& set) {
    const Tensor gates_x = addmm(set.b_ih, set.x, set.w_ih.t());
    const Tensor gates_h = addmm(set.b_hh, set.h, set.w_hh.t());
    return lstm_cell(gates_x, gates_h, set.h, set.c);
  };
  return time_kernel(
      options, "lstm_step", shape_text({"N", "I", "H"}, size),
      lstm_step_cost(batch, input, hidden, element, Pass::forward),
      lstm_step_cost(batch, input, hidden, element, Pass::backward),
      [&](int) {
        // Weights scaled as PyTorch initialises them (uniform in +-1/sqrt(H)), so the gates
        // stay out of saturation like a trained layer's.
        const double scale = 1.0 / std::sqrt(double(hidden));
        sets.push_back(
            {random_input(options, {batch, input}, true),
             random_input(options, {batch, hidden}, true),
             random_input(options, {batch, hidden}, true),
             (random_input(options, {4 * hidden, input}) * scale).set_requires_grad(true),
             (random_input(options, {4 * hidden, hidden}) * scale).set_requires_grad(true),
             (random_input(options, {4 * hidden}) * scale).set_requires_grad(true),
             (random_input(options, {4 * hidden}) * scale).set_requires_grad(true)});
      },
      [&](int i) { step(sets[size_t(i)]); },
      [&](int i) {
        const Set& set = sets[size_t(i)];
        return Graph{{set.x, set.h, set.c, set.w_ih, set.w_hh, set.b_ih, set.b_hh},
                     step(set).h,
                     random_input(options, {batch, hidden})};
      });
}

}  // namespace sonata::bench

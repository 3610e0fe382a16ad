// The optimizer update: AdamW (lr 1e-3, weight decay 1e-2) over f32 parameters split into
// tensors as a model's layers split them, each set with its own optimizer and state (made
// by one untimed step when the set is made, since the timed calls reach most sets only
// once).
#include <memory>
#include <vector>

#include "base/error.h"
#include "bench/kernel_bench.h"
#include "engine/autograd/grad_mode.h"
#include "engine/optim/adamw.h"

namespace sonata::bench {

std::vector<KernelResult> bench_optimizer(const KernelBenchOptions& requested) {
  // Parameters in all, and how many tensors hold them: 4 Mi in 8 on the CPU, 64 Mi in 16
  // on CUDA.
  const KernelBenchOptions options = in_f32(requested);
  const std::vector<int64_t> size = kernel_sizes(options, "optimizer", 2, {int64_t(1) << 22, 8},
                                                 {int64_t(1) << 26, 16}, {4096, 2});
  const int64_t elements = size[0], tensors = size[1];
  SONATA_CHECK(elements >= tensors, "bench_kernels: optimizer --shape needs at least one ",
               "parameter per tensor");
  AdamOptions adamw;
  adamw.lr = 1e-3;
  adamw.weight_decay = 1e-2;
  std::vector<std::unique_ptr<AdamW>> optimizers;
  return time_kernel(
      options, "optimizer", shape_text({"params", "tensors"}, size), adamw_cost(elements),
      KernelCost{},
      [&](int) {
        std::vector<Tensor> params;
        for (int64_t t = 0; t < tensors; ++t) {
          // The remainder goes to the last tensor, so the sizes add up to `elements`.
          const int64_t n = elements / tensors + (t == tensors - 1 ? elements % tensors : 0);
          Tensor param = random_input(options, {n}, true);
          param.set_grad(random_input(options, {n}));
          params.push_back(param);
        }
        optimizers.push_back(std::make_unique<AdamW>(params, adamw));
        // The first step makes the moments: outside the timing, as in a long run.
        NoGradGuard no_grad;
        optimizers.back()->step();
      },
      [&](int i) { optimizers[size_t(i)]->step(); }, nullptr);
}

}  // namespace sonata::bench

// The losses: softmax cross-entropy over class logits (the classifier's head) and CTC on
// log-probabilities (the speech models' loss, in f32 under every precision).
#include <vector>

#include "base/error.h"
#include "bench/kernel_bench.h"
#include "engine/autograd/grad_mode.h"
#include "engine/ops.h"
#include "engine/ops/ctc.h"
#include "engine/ops/loss.h"
#include "engine/random.h"

namespace sonata::bench {
namespace {

// i64 values uniform in [low, high], made on the host.
Tensor random_labels(const Shape& shape, int64_t low, int64_t high) {
  const Tensor uniform = rand(shape) * double(high - low + 1) + double(low);
  return clamp(uniform, double(low), double(high)).to(DType::i64);
}

}  // namespace

std::vector<KernelResult> bench_softmax_ce(const KernelBenchOptions& options) {
  // Rows x classes: 1024 x 1000 on the CPU, 16384 x 4096 on CUDA; mean reduction.
  const std::vector<int64_t> size =
      kernel_sizes(options, "softmax_ce", 2, {1024, 1000}, {16384, 4096}, {4, 10});
  const int64_t rows = size[0], classes = size[1];
  const int64_t element = int64_t(dtype_size(options.dtype));
  struct Set {
    Tensor logits, targets;
  };
  std::vector<Set> sets;
  return time_kernel(
      options, "softmax_ce", shape_text({"N", "C"}, size),
      softmax_cross_entropy_cost(rows, classes, element, Pass::forward),
      softmax_cross_entropy_cost(rows, classes, element, Pass::backward),
      [&](int) {
        sets.push_back({random_input(options, {rows, classes}, true),
                        random_labels({rows}, 0, classes - 1).to(options.device)});
      },
      [&](int i) { cross_entropy(sets[size_t(i)].logits, sets[size_t(i)].targets); },
      [&](int i) {
        const Set& set = sets[size_t(i)];
        return Graph{{set.logits}, cross_entropy(set.logits, set.targets), Tensor()};
      });
}

std::vector<KernelResult> bench_ctc_kernel(const KernelBenchOptions& requested) {
  // T, N, C, L: bench_models --work ctc's defaults (400 frames, 32 clips, 29 classes, 40
  // labels) on the CPU, 64 clips on CUDA. Targets and lengths stay on the host, as ctc_loss
  // wants them; zero_infinity and the mean reduction as the DS2 workload uses them.
  const KernelBenchOptions options = in_f32(requested);
  const std::vector<int64_t> size =
      kernel_sizes(options, "ctc", 4, {400, 32, 29, 40}, {400, 64, 29, 40}, {20, 2, 5, 4});
  const int64_t frames = size[0], batch = size[1], classes = size[2], labels = size[3];
  SONATA_CHECK(classes >= 2 && frames >= 2 * labels + 1, "bench_kernels: ctc --shape ",
               shape_text({"T", "N", "C", "L"}, size),
               " needs 2 classes or more and T >= 2L + 1 so that every target aligns");
  const CtcOptions ctc{.blank = 0, .reduction = Reduction::mean, .zero_infinity = true};
  const Tensor input_lengths = full({batch}, double(frames), TensorOptions{}.with(DType::i64));
  const Tensor target_lengths = full({batch}, double(labels), TensorOptions{}.with(DType::i64));
  struct Set {
    Tensor log_probs, targets;
  };
  std::vector<Set> sets;
  return time_kernel(
      options, "ctc", shape_text({"T", "N", "C", "L"}, size),
      ctc_cost(frames, batch, classes, labels, Pass::forward),
      ctc_cost(frames, batch, classes, labels, Pass::backward),
      [&](int) {
        Tensor log_probs;
        {
          NoGradGuard no_grad;
          log_probs = log_softmax(random_input(options, {frames, batch, classes}), 2);
        }
        log_probs.set_requires_grad(true);
        sets.push_back({log_probs, random_labels({batch, labels}, 1, classes - 1)});
      },
      [&](int i) {
        ctc_loss(sets[size_t(i)].log_probs, sets[size_t(i)].targets, input_lengths, target_lengths,
                 ctc);
      },
      [&](int i) {
        const Set& set = sets[size_t(i)];
        return Graph{{set.log_probs},
                     ctc_loss(set.log_probs, set.targets, input_lengths, target_lengths, ctc),
                     Tensor()};
      });
}

}  // namespace sonata::bench

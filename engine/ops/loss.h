#pragma once
// Classification losses with torch.nn.functional's semantics.
//
// cross_entropy(logits, target): logits [N, C] or [N, C, d1, ...] (or [C] with a scalar
// target), target i64 [N] or [N, d1, ...] holding class indices. Per position:
//   loss = (1 - s) * (-w_t * log_softmax(x)_t) + s / C * sum_c(-w_c * log_softmax(x)_c)
// (s = label_smoothing, w = weight or ones; torch >= 1.10), 0 where target == ignore_index.
// Reduction::none gives the per-position losses (target's shape), sum their sum, mean their
// sum divided by the sum of w_t over non-ignored positions (NaN when every one is ignored,
// as PyTorch). Losses are f32 for f16/bf16/f32 logits, f64 for f64. The class weights get no
// gradient.
//
// Targets on the CPU are checked on the host (an out-of-range class is reported with its
// position); targets on a GPU are not read back (that would wait for the device): an
// out-of-range one makes the loss and its gradient NaN.
//
// nll_loss(log_probs, target): the same on log-probabilities, without label smoothing.
#include <cstdint>

#include "engine/ops/reduction.h"
#include "engine/tensor.h"

namespace sonata {

struct CrossEntropyOptions {
  Reduction reduction = Reduction::mean;
  int64_t ignore_index = -100;
  double label_smoothing = 0.0;
};

struct NllLossOptions {
  Reduction reduction = Reduction::mean;
  int64_t ignore_index = -100;
};

Tensor cross_entropy(const Tensor& logits, const Tensor& target, const Tensor& weight = Tensor(),
                     const CrossEntropyOptions& options = {});

Tensor nll_loss(const Tensor& log_probs, const Tensor& target, const Tensor& weight = Tensor(),
                const NllLossOptions& options = {});

}  // namespace sonata

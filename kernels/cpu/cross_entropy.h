#pragma once
// Fused log_softmax + negative log-likelihood with class weights, ignore_index and label
// smoothing (torch.nn.functional.cross_entropy), over contiguous [outer, classes, inner]
// scores and i64 targets [outer, inner]: one "position" per (outer, inner) pair. CPU
// reference in f32 / f64, accumulated in double; the CUDA twin in kernels/cuda/cross_entropy.h
// has the same functions plus a trailing stream.
//
// `dtype` is the scores' element type. weight ([classes], may be null) and the per-position
// arrays (loss, target_weight, log_sum_exp, grad_loss) are f64 when dtype is f64, else f32.
// log_sum_exp holds two values per position, [positions, 2]: the largest score m and
// log(sum_c exp(z_c - m)). Their sum is the log-sum-exp, kept apart because the sum rounds
// away the digits that (z - m) - log(...) keeps: in f32, 1e4 + log(2) = 10000.6934, which
// would make p off by 2e-4. With normalize = false the scores are already log-probabilities
// (nll_loss): no log_softmax, both values are written as 0.
//
// Per position with target t (s = label_smoothing, w_c = weight[c] or 1, lp = log-probs):
//   loss = (1 - s) * (-w_t * lp_t) + s / classes * sum_c(-w_c * lp_c),
//   target_weight = w_t (the mean reduction divides by the sum of these);
// both 0 where t == ignore_index. The engine validates targets; a target outside
// [0, classes) that reaches a kernel gives NaN loss and gradient at its position.
#include <cstdint>

#include "base/dtype.h"

namespace sonata::kernels::cpu {

void cross_entropy_forward(DType dtype, const void* scores, const int64_t* target,
                           const void* weight, int64_t outer, int64_t classes, int64_t inner,
                           int64_t ignore_index, double label_smoothing, bool normalize, void* loss,
                           void* target_weight, void* log_sum_exp);

// grad_scores[c] = grad_loss * (p_c * ((1 - s) * w_t + s / classes * sum_k w_k)
//                               - (1 - s) * w_t * [c == t] - s / classes * w_c),
// with p_c = exp((score_c - m) - log(sum)) (the two log_sum_exp values) when normalize,
// else 0; 0 at ignored positions.
void cross_entropy_backward(DType dtype, const void* grad_loss, const void* scores,
                            const int64_t* target, const void* weight, const void* log_sum_exp,
                            int64_t outer, int64_t classes, int64_t inner, int64_t ignore_index,
                            double label_smoothing, bool normalize, void* grad_scores);

}  // namespace sonata::kernels::cpu

#pragma once
// How the CUDA CTC loss (kernels/cuda/ctc.cu) launches its alpha and beta recursions.
// Host-side and pure, so that the CPU tests check the choices.
//
// Each recursion is a serial chain of T_n steps with a block barrier per step, one block per
// sample; with a small batch (1-4 utterances) the GPU runs a handful of blocks and the loss
// is the length of those chains. When the forward's result will be differentiated, beta
// (which needs nothing from alpha) runs in the forward's launch on blocks N..2N-1, so the
// two chains of a sample run concurrently and the backward launches only the gradient
// kernel. With a large batch the 2N blocks may not all be resident at once; the fused
// launch is then no slower than alpha and beta one after the other, and it is kept so that
// the backward's inputs never depend on the batch size. Evaluation runs alpha only.
#include <cstdint>

namespace sonata::kernels {

// Threads per recursion block: enough for every state of the longest target (2L+1),
// rounded up to whole warps; past this, each thread loops over several states (a step's
// cost is dominated by its barrier, not its states).
inline constexpr int kCtcMaxRecursionThreads = 512;
inline constexpr int kCtcWarpSize = 32;

struct CtcRecursionPlan {
  bool beta_in_forward = false;  // blocks [N, 2N) of the forward's launch compute beta
  int64_t blocks = 0;            // N, or 2N with beta; 0 launches nothing (an empty batch)
  int threads = kCtcWarpSize;    // per block, a multiple of 32 in [32, 512]
};

// The forward's launch for `batch` samples whose longest target has (max_states - 1) / 2
// labels; `differentiated`: the loss will be back-propagated (grad mode on and log_probs
// requiring grad), so beta is wanted.
CtcRecursionPlan plan_ctc_recursions(int64_t batch, int64_t max_states, bool differentiated);

}  // namespace sonata::kernels

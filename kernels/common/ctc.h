#pragma once
// What the CTC kernels (kernels/cpu/ctc.h, kernels/cuda/ctc.h) share: the batch's targets,
// flattened by the engine into one int64 buffer, and the problem's sizes.
#include <cstdint>

namespace sonata::kernels {

// Every pointer lives where the kernel runs (host for the CPU, device for CUDA). Samples
// index their labels through label_offsets, so padded [N, S] and concatenated targets reach
// the kernels in one layout.
struct CtcTargets {
  const int64_t* labels = nullptr;          // all samples' labels back to back (sum of L_n)
  const int64_t* label_offsets = nullptr;   // [N] where sample n's labels start in `labels`
  const int64_t* target_lengths = nullptr;  // [N] L_n
  const int64_t* input_lengths = nullptr;   // [N] T_n
  // The label -> positions index the CUDA gradient gathers through (the CPU reference
  // log-adds state by state, as PyTorch does, and ignores it): for sample n, the target
  // positions j (0 <= j < L_n) ordered by label, stored from label_offsets[n] on; and
  // [N, C + 1] bounds, class c of sample n owning positions
  // class_positions[label_offsets[n] + class_starts[n*(C+1) + c] .. + class_starts[.. + c + 1]).
  const int64_t* class_positions = nullptr;
  const int64_t* class_starts = nullptr;
};

struct CtcProblem {
  int64_t max_time = 0;    // T: log_probs is a contiguous [T, N, C] block
  int64_t batch = 0;       // N
  int64_t classes = 0;     // C
  int64_t max_states = 1;  // 2 * max(L_n) + 1: the last dim of the alpha/beta workspaces
  int64_t blank = 0;
  bool zero_infinity = false;
};

}  // namespace sonata::kernels

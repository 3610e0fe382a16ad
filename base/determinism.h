#pragma once
// The process-wide switch behind `trainer --deterministic` (torch.use_deterministic_algorithms):
// when on, kernels choose only algorithms whose results do not depend on scheduling (cuDNN's
// CUDNN_DETERMINISTIC convolutions; no atomics-based reductions), at some cost in speed. The
// CPU backend is deterministic either way (fixed thread count and reduction order). Set it
// before the first kernel runs: algorithm choices are cached per shape.
namespace sonata {

void set_deterministic_algorithms(bool enabled);
bool deterministic_algorithms();

}  // namespace sonata

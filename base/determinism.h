#pragma once
// The process-wide switch behind `trainer --deterministic` (torch.use_deterministic_algorithms):
// when on, kernels choose only algorithms whose results do not depend on scheduling (cuDNN's
// CUDNN_DETERMINISTIC convolutions among those cudnnFind times; no atomics-based reductions:
// CUDA index_add / scatter_add then sum each element's sources in a fixed order), at some
// cost in speed. The CPU backend is deterministic either way (fixed thread count and
// reduction order). Cached convolution algorithms are keyed by it, so it may change between
// steps.
namespace sonata {

void set_deterministic_algorithms(bool enabled);
bool deterministic_algorithms();

}  // namespace sonata

#pragma once
// Broadcasts many small tensors (parameters, BatchNorm buffers) from `root` with one call per
// dtype instead of one per tensor: each dtype's tensors are packed into a flat buffer, sent,
// and unpacked in place on the other ranks. A collective: every rank passes tensors of the
// same shapes and dtypes in the same order. Autograd is not recorded.
#include <vector>

#include "comm/process_group.h"

namespace sonata {

void broadcast_coalesced(ProcessGroup& group, const std::vector<Tensor>& tensors, int root);

}  // namespace sonata

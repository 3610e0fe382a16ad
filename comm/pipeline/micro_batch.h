#pragma once
// Splitting a batch into M micro-batches along dim 0 (inputs, per-sample lengths and every
// target tensor alike): sizes B / M, the first B % M one larger (torch.tensor_split's rule).
#include <cstdint>
#include <vector>

#include "engine/nn/layer_sequence.h"

namespace sonata {

std::vector<int64_t> micro_batch_sizes(int64_t batch, int micro_batches);

// Views of `value` (its lengths too, when defined), one per micro-batch.
std::vector<LayerValue> split_micro_batches(const LayerValue& value, int micro_batches);
// targets[m][k]: micro-batch m's rows of targets[k]; each target has `batch` rows.
std::vector<std::vector<Tensor>> split_targets(const std::vector<Tensor>& targets, int64_t batch,
                                               int micro_batches);

}  // namespace sonata

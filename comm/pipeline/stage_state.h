#pragma once
// A pipelined model's state in one place: every stage's state_dict (under the whole model's
// names) gathered on stage 0, whole or as the list of what it holds (for a checkpoint
// writer that then receives the tensors one at a time, train/pipeline/pipeline_parallel.h);
// and the reverse, a whole model's state dict handed out to the stages. All are collectives
// over the stage group, stage 0 exchanging with each other stage in turn.
#include <vector>

#include "comm/process_group.h"
#include "engine/nn/module.h"
#include "engine/tensor_spec.h"

namespace sonata {

// On rank 0: every rank's `stage_state` in rank order, as CPU copies (the whole model's
// state_dict when the ranks hold the stages in order). Elsewhere: empty.
NamedTensors gather_state_dict(ProcessGroup& group, const NamedTensors& stage_state);

// A gathered state whose layers were cut into row pieces (comm/pipeline/partition.h): the
// entries of one name, in order, concatenated along dim 0 into one, where the name first
// appears. Entries of unique names pass as they are.
NamedTensors merge_row_pieces(const NamedTensors& gathered);

// On rank 0: what every rank's `stage_state` holds (names, dtypes, shapes), by rank, without
// the data; elsewhere: empty. For a writer that fetches the tensors one at a time later.
std::vector<std::vector<TensorSpec>> gather_state_specs(ProcessGroup& group,
                                                        const NamedTensors& stage_state);

// Copies the entries of rank 0's `full` named like each rank's `stage_state` entries into
// those tensors (values of another floating dtype are converted). An entry missing from
// `full`, or of another shape, is an error on every rank, naming the first such entry.
// `full` is read only on rank 0.
void scatter_state_dict(ProcessGroup& group, const NamedTensors& full,
                        const NamedTensors& stage_state);

}  // namespace sonata

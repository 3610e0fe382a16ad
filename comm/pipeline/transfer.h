#pragma once
// Moving a LayerValue between neighbouring stages. The receiver cannot know the shape in
// advance (DS2's time axis changes with every batch), so a small header travels first:
// dtype, shape and whether per-sample lengths follow; then the activation, then the lengths.
// Gradients travel back without a header: they have the shape of the activation sent.
//
// Tags separate micro-batches and kinds of message (message_tags.h).
#include <memory>
#include <vector>

#include "comm/pipeline/message_tags.h"
#include "comm/process_group.h"
#include "engine/nn/layer_sequence.h"

namespace sonata {

// The tag of one message of micro-batch `micro_batch` (message_tags.h); a micro-batch past
// kMaxMicroBatches is refused, its tags meeting the state exchanges'.
int pipe_tag(int micro_batch, PipeMessage kind);

// Posts the header, activation and lengths to `peer`; the Works must be waited before the
// value's tensors are released (each Work keeps its own tensor alive until then).
std::vector<std::shared_ptr<Work>> send_value(ProcessGroup& group, const LayerValue& value,
                                              int peer, int micro_batch);

// Receives what send_value sent: waits for the header, then for the data. The activation
// lands on the group's device, the lengths on the CPU. `waited_seconds` grows by the time
// spent blocked.
LayerValue recv_value(ProcessGroup& group, int peer, int micro_batch, double* waited_seconds);

// Blocks on `work`, adding the time to `waited_seconds` (may be null).
void timed_wait(Work& work, double* waited_seconds);

}  // namespace sonata

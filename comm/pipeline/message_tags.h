#pragma once
// Every point-to-point tag a pipelined run's messages carry, in one place, so that no two
// kinds of message can meet: MPI matches a receive by source and tag (NCCL has no tags and
// matches messages in the order they are posted; the schedule posts them in matching order).
//
// Below kFirstStateTag: the per-micro-batch messages between neighbouring stages
// (transfer.h), micro_batch * kPipeMessageKinds + kind. Above it: the exchanges of a
// stage's state (stage_state.h) and the checkpoint writer's (train/pipeline/), each kind
// its own tag.
#include <cstdint>

namespace sonata {

// What one message of a micro-batch carries.
enum class PipeMessage { header = 0, activation = 1, lengths = 2, gradient = 3, loss = 4 };
// Room for each micro-batch's kinds (five used, three spare).
constexpr int kPipeMessageKinds = 8;

// Forward-only passes (evaluation) number their batches modulo this: one batch is in flight
// at a time, every message of it matched before the next batch's are posted.
constexpr int64_t kForwardTagCycle = 1000;

// The exchanges of whole tensors, apart from (above) every per-micro-batch tag.
enum class StateTag : int {
  size = 30000,               // a state's entry count (stage_state.cpp)
  names = 30001,              // its names
  shapes = 30002,             // their dtypes and shapes
  status = 30003,             // whether a scatter's entry fits (scatter_state_dict)
  tensor = 30004,             // an entry's data
  checkpoint_tensor = 30010,  // a checkpoint tensor streamed to its writer
};
constexpr int kFirstStateTag = int(StateTag::size);

constexpr int tag_of(StateTag tag) {
  return int(tag);
}

// Micro-batches of one step whose messages stay below the state tags.
constexpr int kMaxMicroBatches = kFirstStateTag / kPipeMessageKinds - 1;
static_assert(kForwardTagCycle <= kMaxMicroBatches, "forward-only tags would meet the state's");

}  // namespace sonata

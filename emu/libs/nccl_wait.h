#pragma once
// Bounded waits of the emulated NCCL: every rendezvous polls with a timeout and gives up
// early when its communicator or a peer's is aborted.
#include <functional>
#include <string>

#include "emu/libs/nccl_comm.h"

namespace sonata::emu::nccl {

enum class WaitResult { ok, timeout, aborted, peer_aborted };

// Polls `ready` (backing off to 2 ms) until it holds, the communicator is aborted here or by
// a peer, or `timeout_s` passes. Lets other host threads drive the emulated devices meanwhile.
WaitResult wait_until(CommState& comm, const std::function<bool()>& ready, double timeout_s);
// Why a wait failed, as a phrase ("" for ok).
std::string wait_failure(CommState& comm, WaitResult result, double timeout_s);
// "rank 1 was in ncclBroadcast #4 (...)": what a peer last said it was doing.
std::string peer_state(CommState& comm, int peer);

}  // namespace sonata::emu::nccl

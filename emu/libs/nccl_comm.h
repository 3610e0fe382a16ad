#pragma once
// The emulated NCCL's communicator state, shared by the API (nccl_api.cpp) and the work it
// enqueues (nccl_ops.cpp): the work holds it, so a communicator destroyed or aborted with
// work still queued leaves that work a state to find the abort in.
#include <nccl.h>

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "emu/libs/nccl_shm.h"

namespace sonata::emu::nccl {

enum class OpKind : int32_t {
  none = 0,
  all_reduce,
  broadcast,
  reduce,
  reduce_scatter,
  all_gather,
  send,
  recv,
};

// One operation of a group (or a lone one), as issued.
struct Op {
  OpKind kind = OpKind::none;
  const void* send = nullptr;
  void* recv = nullptr;
  size_t count = 0;
  ncclDataType_t dtype = ncclFloat32;
  ncclRedOp_t redop = ncclSum;
  int root = 0;      // root, or the peer of send/recv
  uint64_t seq = 0;  // the communicator's collective number, or the pair's message number
};

struct CommState {
  std::string name;  // the control segment's shm name
  int nranks = 0, rank = 0, device = 0;
  Segment control;
  std::atomic<bool> aborted{false};
  std::atomic<bool> destroyed{false};
  std::atomic<int> async_error{ncclSuccess};
  std::mutex mutex;  // issue counters and the error text
  uint64_t next_collective = 0;
  uint64_t next_host_collective = 0;
  std::vector<uint64_t> next_send, next_recv;  // per peer
  std::string error_text;
  // NCCL's own device buffers, allocated with plain cudaMalloc when the communicator first
  // communicates (as NCCL connects its peers lazily); freed when it is destroyed.
  void* buffers = nullptr;

  Header* header() const { return header_of(control.data()); }
  RankSlot* slot(int r) const { return slot_of(control.data(), r); }
  PairSlot* pair(int from, int to) const { return pair_of(control.data(), nranks, from, to); }

  // Records the communicator's asynchronous error (the first one stays) and logs it.
  void record_error(ncclResult_t error, const std::string& message);
  std::string last_error();
};

// The bytes of one element of `dtype`, or 0 for a type the emulator does not reduce.
size_t dtype_bytes(ncclDataType_t dtype);
const char* dtype_name(ncclDataType_t dtype);
const char* op_name(OpKind kind);
std::string describe(const Op& op);

// Joins (creating if first) the communicator `name` of `nranks` as `rank`; waits for all.
ncclResult_t join(const std::string& name, int nranks, int rank, int device,
                  std::shared_ptr<CommState>* out, std::string* error);
// Leaves; the last rank to leave unlinks the control segment.
void leave(CommState& comm, bool abort);

// Host-side exchange of (color, key) for ncclCommSplit: fills the group of this rank (ranks
// of the parent in new-rank order) and a name for the new communicator.
ncclResult_t split_exchange(CommState& comm, int color, int key, std::vector<int>* members,
                            std::string* name);

// The operations of one group (or one operation) of a communicator, as one piece of work:
// poll() is the work's readiness test (it runs only once the work heads its stream, so the
// send buffers hold their final data): it publishes this rank's sends and contributions and
// fetches what its peers published, without blocking, and is true once everything arrived
// or the wait failed (a mismatch, an abort, the timeout). run() then writes the results, or
// records the failure as the communicator's asynchronous error.
class OpsInFlight {
 public:
  OpsInFlight(std::shared_ptr<CommState> comm, std::vector<Op> ops);
  ~OpsInFlight();
  bool poll();
  void run();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Tells every communicator of this process on `device` what now holds the device ("" when
// nothing), so their peers' timeout messages can say why this rank does not arrive.
void announce_device(int device, const std::string& holder);

// SONATA_EMU_NCCL_TIMEOUT_S, default 60.
double timeout_seconds();

}  // namespace sonata::emu::nccl

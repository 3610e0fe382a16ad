#pragma once
// The stream/event scheduler of the emulated devices. Work is lazy: enqueue records it and
// returns; it runs only when a host call needs its result (a synchronisation, a blocking
// copy, cudaFree, a query), on the calling thread, under the ExecLock. The scheduler then
// runs just the work that result depends on -- the stream's earlier work and, through
// cudaStreamWaitEvent and the legacy default stream's implicit synchronisation, other
// streams' -- choosing among the ready heads with a seeded RNG that prefers the most
// recently enqueued (the least convenient legal order). A query runs at most a few pieces,
// so polling loops end, and answers cudaErrorNotReady for work pending when it was asked. A
// fault in a piece of work poisons its device, whose remaining work is dropped. SONATA_EMU_TRACE=1
// prints each piece of work as it starts.
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "driver_types.h"
#include "emu/runtime/device_work.h"
#include "emu/runtime/host_callbacks.h"

namespace sonata::emu {

struct StreamState;

// One piece of enqueued work.
struct Node {
  uint64_t seq = 0;  // enqueue order across all streams
  StreamState* stream = nullptr;
  Work work;
  std::vector<std::shared_ptr<Node>> deps;  // other streams' work this waits for
  bool running = false;        // started, not finished (it stays its stream's head meanwhile)
  bool host_function = false;  // runs on the callback thread (cudaLaunchHostFunc)
  std::shared_ptr<HostCall> host_call;  // while it does
  bool done = false;
  std::chrono::steady_clock::time_point done_at;
};
using NodePtr = std::shared_ptr<Node>;

struct StreamState {
  int device = 0;
  unsigned flags = 0;
  int priority = 0;
  bool legacy = false;  // the device's legacy default stream (0, cudaStreamLegacy)
  bool destroyed = false;
  std::deque<NodePtr> pending;  // not yet run, in stream order
};

struct EventState {
  int device = 0;
  unsigned flags = 0;
  bool recorded = false;
  NodePtr node;  // the marker of the last record
};

// Handles. resolve_stream maps 0 and cudaStreamLegacy to the calling thread's device's
// legacy stream (applying the device-selection rule: may throw UsageError) and
// cudaStreamPerThread to the thread's per-thread stream; nullptr for an unknown or
// destroyed handle.
StreamState* resolve_stream(cudaStream_t stream);
cudaStream_t create_stream(int device, unsigned flags, int priority);
// Outstanding work still runs; the handle is invalid from now on.
void destroy_stream(StreamState* stream);

EventState* resolve_event(cudaEvent_t event);
cudaEvent_t create_event(int device, unsigned flags);
void destroy_event(EventState* event);

// Appends `work` to `stream` after `waits` (and the legacy stream's implicit ordering).
NodePtr enqueue_node(StreamState* stream, Work work, std::vector<NodePtr> waits = {});

// The last work enqueued on the stream that has not run, or nullptr.
NodePtr stream_tail(const StreamState& stream);
// The pending tails of every stream of `device`.
std::vector<NodePtr> device_tails(int device);
std::vector<NodePtr> all_tails();

// Runs work until every target is done; at most `max_steps` pieces (0: no bound).
// Returns whether every target is done: without a bound, false only when the wait cannot
// end (a synchronisation inside work, waiting for work ordered after it), said on stderr;
// the entry point then fails with cudaErrorUnknown.
bool run_until(const std::vector<NodePtr>& targets, size_t max_steps = 0);

// The bound of a query's progress (cudaEventQuery, cudaStreamQuery).
constexpr size_t kQuerySteps = 2;

// A query (cudaEventQuery, cudaStreamQuery, cudaEventElapsedTime): whether every target was
// done when asked. If not, runs at most kQuerySteps pieces toward them, so a polling loop
// ends, and answers false even when those finished them: on a card work still pending at a
// query is cudaErrorNotReady at least once, so a caller's NotReady branch runs here too.
bool query_done(const std::vector<NodePtr>& targets);

// Whether the calling thread is inside a host function (cudaLaunchHostFunc), where CUDA
// calls are refused.
bool in_host_function();

// Reseeds the scheduler's order (SONATA_EMU_SEED at start-up, default 1).
void set_seed(uint64_t seed);

}  // namespace sonata::emu

namespace sonata::emu {
// cudaLaunchHostFunc: fn(user_data) runs in stream order on the callback thread, with CUDA
// calls refused inside it.
void enqueue_host_function(StreamState* stream, cudaHostFn_t fn, void* user_data);
}  // namespace sonata::emu

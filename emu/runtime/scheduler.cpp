#include "emu/runtime/scheduler.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <random>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "emu/runtime/device_table.h"
#include "emu/runtime/error_names.h"
#include "emu/runtime/error_state.h"
#include "emu/runtime/exec_lock.h"
#include "emu/runtime/memory_map.h"
#include "emu/runtime/profile.h"

namespace sonata::emu {

namespace {

uint64_t seed_from_environment() {
  const char* text = std::getenv("SONATA_EMU_SEED");
  if (!text || !*text) return 1;
  char* end = nullptr;
  const unsigned long long seed = std::strtoull(text, &end, 10);
  if (*end != '\0') {
    std::fprintf(stderr, "sonata emu: SONATA_EMU_SEED=\"%s\" is not a number; using 1\n", text);
    return 1;
  }
  return seed;
}

struct Registry {
  std::vector<StreamState*> legacy;                       // per device
  std::vector<std::vector<StreamState*>> device_streams;  // per device, created streams
  std::unordered_set<StreamState*> live_streams;
  std::unordered_set<EventState*> live_events;
  // Every stream ever made, destroyed ones included (their nodes may still point at them).
  std::vector<std::unique_ptr<StreamState>> owned;
  uint64_t next_seq = 0;
  std::mt19937_64 rng{seed_from_environment()};
};

// Stream states are never freed: a destroyed stream's work may still be pending and nodes
// point at their stream (a few bytes per destroyed stream).
Registry& registry() {
  static Registry* instance = [] {
    auto* r = new Registry;
    const int count = device_count();
    r->device_streams.resize(static_cast<size_t>(count));
    for (int device = 0; device < count; ++device) {
      StreamState* legacy = r->owned.emplace_back(std::make_unique<StreamState>()).get();
      legacy->device = device;
      legacy->legacy = true;
      r->legacy.push_back(legacy);
    }
    return r;
  }();
  return *instance;
}

thread_local std::vector<StreamState*> t_per_thread_streams;
thread_local bool t_in_host_function = false;
thread_local const Node* t_running = nullptr;

StreamState* per_thread_stream(int device) {
  if (t_per_thread_streams.empty()) {
    t_per_thread_streams.assign(static_cast<size_t>(device_count()), nullptr);
  }
  StreamState*& stream = t_per_thread_streams[static_cast<size_t>(device)];
  if (!stream) {
    stream = registry().owned.emplace_back(std::make_unique<StreamState>()).get();
    stream->device = device;
    registry().device_streams[static_cast<size_t>(device)].push_back(stream);
  }
  return stream;
}

// Streams that synchronise with the legacy stream: every stream of the device created
// without cudaStreamNonBlocking (and still holding work, or still alive).
std::vector<StreamState*> blocking_streams(int device) {
  auto& streams = registry().device_streams[static_cast<size_t>(device)];
  std::erase_if(streams, [](StreamState* s) { return s->destroyed && s->pending.empty(); });
  std::vector<StreamState*> result;
  for (StreamState* s : streams) {
    if (!(s->flags & cudaStreamNonBlocking)) result.push_back(s);
  }
  return result;
}

bool deps_done(const Node& node) {
  return std::all_of(node.deps.begin(), node.deps.end(), [](const NodePtr& d) { return d->done; });
}

// Which prefix of each stream the targets need: a stream's limit is the last sequence number
// on it that some target depends on (through stream order and cross-stream waits).
struct Closure {
  struct Limit {
    uint64_t seq = 0;
    size_t scanned = 0;
  };
  std::unordered_map<StreamState*, Limit> limits;
  std::vector<StreamState*> order;  // the streams in first-seen order (deterministic)
  std::vector<StreamState*> work;

  void raise(StreamState* stream, uint64_t seq) {
    auto [it, added] = limits.try_emplace(stream);
    if (added) order.push_back(stream);
    if (!added && it->second.seq >= seq) return;
    it->second.seq = seq;
    work.push_back(stream);
  }

  void expand() {
    while (!work.empty()) {
      StreamState* stream = work.back();
      work.pop_back();
      Limit& limit = limits[stream];
      while (limit.scanned < stream->pending.size() &&
             stream->pending[limit.scanned]->seq <= limit.seq) {
        // Copy: raise() may add to `limits`, which can rehash (the Limit reference stays valid
        // in an unordered_map, but the deque of another stream is untouched anyway).
        const NodePtr node = stream->pending[limit.scanned];
        ++limit.scanned;
        for (const NodePtr& dep : node->deps) {
          if (!dep->done) raise(dep->stream, dep->seq);
        }
      }
    }
  }
};

std::string fault_text(const Node& node, const AccessCheck& check) {
  return node.work.name + ": " + check.detail;
}

// Checks a piece of work's ranges before it runs; false (and the device poisoned) when one
// is outside every live allocation, freed, or (for reads) never written.
bool ranges_ok(const Node& node) {
  const int device = node.stream->device;
  for (const MemRange& range : node.work.reads) {
    if (range.bytes == 0) continue;
    const AccessCheck check = check_access(range.data, range.bytes, AccessKind::read);
    if (check.verdict == AccessVerdict::ok ||
        check.verdict == AccessVerdict::outside_device_memory) {
      continue;
    }
    const bool uninit = check.verdict == AccessVerdict::uninitialised;
    set_sticky_error(device, uninit ? cudaErrorLaunchFailure : cudaErrorIllegalAddress,
                     (uninit ? "initcheck: " : "memcheck: ") + fault_text(node, check));
    return false;
  }
  for (const MemRange& range : node.work.writes) {
    if (range.bytes == 0) continue;
    const AccessCheck check = check_access(range.data, range.bytes, AccessKind::write);
    if (check.verdict == AccessVerdict::ok ||
        check.verdict == AccessVerdict::outside_device_memory) {
      continue;
    }
    set_sticky_error(device, cudaErrorIllegalAddress, "memcheck: " + fault_text(node, check));
    return false;
  }
  return true;
}

void finish_node(const NodePtr& node) {
  node->running = false;
  node->stream->pending.pop_front();
  node->done = true;
  node->done_at = std::chrono::steady_clock::now();
  node->deps.clear();
  node->host_call.reset();
  Work finished;  // frees staged copies and closures
  finished.name = std::move(node->work.name);
  node->work = std::move(finished);
}

// SONATA_EMU_TRACE=1 prints each piece of work as it starts: the order a seed gave.
bool tracing() {
  static const bool trace = [] {
    const char* text = std::getenv("SONATA_EMU_TRACE");
    return text && *text && std::string(text) != "0";
  }();
  return trace;
}

void trace_start(const Node& node, bool dropped) {
  const StreamState& stream = *node.stream;
  std::fprintf(stderr, "sonata emu trace: device %d %sstream %p #%llu: %s%s\n", stream.device,
               stream.legacy ? "legacy " : "", static_cast<const void*>(&stream),
               static_cast<unsigned long long>(node.seq), node.work.name.c_str(),
               dropped ? " (dropped: the device is poisoned)" : "");
}

// Finishes a host function's node once its call returned; false while it runs.
bool finish_host_call(const NodePtr& node) {
  if (!node->host_call->finished.load(std::memory_order_acquire)) return false;
  if (!node->host_call->failure.empty()) {
    set_sticky_error(node->stream->device, cudaErrorLaunchFailure,
                     node->work.name + " threw: " + node->host_call->failure);
  }
  finish_node(node);
  return true;
}

// How long the scheduler waits for a host function before it goes on without it: most
// return at once, and waiting for them keeps the order a seed gives the same; one that
// blocks (until the host opens a gate) holds only its own stream.
constexpr auto kHostCallPatience = std::chrono::milliseconds(100);

// Starts a node; finishes it too unless it is a host function still running on the
// callback thread (the node then holds its stream until it returns).
void run_node(const NodePtr& node) {
  const int device = node->stream->device;
  // The node stays at its stream's head while it runs, marked running, so that work that
  // re-enters the scheduler cannot start its successors (or itself) early.
  node->running = true;
  if (tracing()) trace_start(*node, sticky_error(device) != cudaSuccess);
  profile::work_started(node->seq, node->work);
  const bool healthy = sticky_error(device) == cudaSuccess && ranges_ok(*node);
  if (healthy && node->host_function) {
    node->host_call = std::make_shared<HostCall>();
    node->host_call->run = node->work.run;
    dispatch_host_call(node->host_call);
    const auto deadline = std::chrono::steady_clock::now() + kHostCallPatience;
    while (!finish_host_call(node) && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
    profile::work_finished();
    return;
  }
  if (healthy && node->work.run) {
    const Node* outer = t_running;
    t_running = node.get();
    try {
      node->work.run();
    } catch (const std::exception& failure) {
      set_sticky_error(device, cudaErrorLaunchFailure,
                       node->work.name + " threw: " + failure.what());
    } catch (...) {
      set_sticky_error(device, cudaErrorLaunchFailure, node->work.name + " threw");
    }
    t_running = outer;
  }
  profile::work_finished();
  finish_node(node);
}

// Finishes the host functions of `streams` whose call returned.
void collect_host_calls(const std::vector<StreamState*>& streams) {
  for (StreamState* stream : streams) {
    if (stream->pending.empty()) continue;
    const NodePtr head = stream->pending.front();
    if (head->host_call) finish_host_call(head);
  }
}

// The scheduler's choice among the ready heads: the most recently enqueued with
// probability 0.6, else the next most recent, and so on.
size_t choose(std::vector<NodePtr>& candidates) {
  std::sort(candidates.begin(), candidates.end(),
            [](const NodePtr& a, const NodePtr& b) { return a->seq > b->seq; });
  size_t index = 0;
  while (index + 1 < candidates.size() && registry().rng() % 5 < 2) ++index;
  return index;
}

}  // namespace

StreamState* resolve_stream(cudaStream_t stream) {
  Registry& r = registry();
  if (stream == nullptr || stream == cudaStreamLegacy) {
    return r.legacy[static_cast<size_t>(current_device())];
  }
  if (stream == cudaStreamPerThread) return per_thread_stream(current_device());
  auto* state = reinterpret_cast<StreamState*>(stream);
  return r.live_streams.count(state) ? state : nullptr;
}

cudaStream_t create_stream(int device, unsigned flags, int priority) {
  Registry& r = registry();
  StreamState* stream = r.owned.emplace_back(std::make_unique<StreamState>()).get();
  stream->device = device;
  stream->flags = flags;
  stream->priority = priority;
  r.live_streams.insert(stream);
  r.device_streams[static_cast<size_t>(device)].push_back(stream);
  return reinterpret_cast<cudaStream_t>(stream);
}

void destroy_stream(StreamState* stream) {
  stream->destroyed = true;
  registry().live_streams.erase(stream);
}

EventState* resolve_event(cudaEvent_t event) {
  auto* state = reinterpret_cast<EventState*>(event);
  return registry().live_events.count(state) ? state : nullptr;
}

cudaEvent_t create_event(int device, unsigned flags) {
  auto* event = new EventState;
  event->device = device;
  event->flags = flags;
  registry().live_events.insert(event);
  return reinterpret_cast<cudaEvent_t>(event);
}

void destroy_event(EventState* event) {
  registry().live_events.erase(event);
  delete event;  // its marker node lives on in its stream until it runs
}

NodePtr enqueue_node(StreamState* stream, Work work, std::vector<NodePtr> waits) {
  Registry& r = registry();
  auto node = std::make_shared<Node>();
  node->seq = ++r.next_seq;
  node->stream = stream;
  node->work = std::move(work);
  for (NodePtr& wait : waits) {
    if (wait && !wait->done) node->deps.push_back(std::move(wait));
  }
  // The legacy default stream waits for all blocking streams of its device, and they wait
  // for it.
  if (stream->legacy) {
    for (StreamState* other : blocking_streams(stream->device)) {
      if (NodePtr tail = stream_tail(*other)) node->deps.push_back(std::move(tail));
    }
  } else if (!(stream->flags & cudaStreamNonBlocking)) {
    if (NodePtr tail = stream_tail(*r.legacy[static_cast<size_t>(stream->device)])) {
      node->deps.push_back(std::move(tail));
    }
  }
  stream->pending.push_back(node);
  profile::enqueued(node->seq, stream->device, stream, node->work);
  return node;
}

NodePtr stream_tail(const StreamState& stream) {
  return stream.pending.empty() ? nullptr : stream.pending.back();
}

std::vector<NodePtr> device_tails(int device) {
  Registry& r = registry();
  std::vector<NodePtr> tails;
  if (NodePtr tail = stream_tail(*r.legacy[static_cast<size_t>(device)])) tails.push_back(tail);
  for (StreamState* stream : r.device_streams[static_cast<size_t>(device)]) {
    if (NodePtr tail = stream_tail(*stream)) tails.push_back(tail);
  }
  return tails;
}

std::vector<NodePtr> all_tails() {
  std::vector<NodePtr> tails;
  for (int device = 0; device < device_count(); ++device) {
    for (NodePtr& tail : device_tails(device)) tails.push_back(std::move(tail));
  }
  return tails;
}

bool run_until(const std::vector<NodePtr>& targets, size_t max_steps) {
  auto all_done = [&] {
    return std::all_of(targets.begin(), targets.end(),
                       [](const NodePtr& t) { return !t || t->done; });
  };
  // A wait of the host (not a query's bounded progress, not work waiting inside work).
  if (max_steps == 0 && !t_running) profile::host_wait(profile::t_api_call, !all_done());
  if (all_done()) return true;
  Closure closure;
  for (const NodePtr& target : targets) {
    if (target && !target->done) closure.raise(target->stream, target->seq);
  }
  closure.expand();
  size_t steps = 0;
  std::vector<NodePtr> candidates;
  while (!all_done()) {
    candidates.clear();
    bool waiting = false;
    bool waiting_on_self = false;
    collect_host_calls(closure.order);
    if (all_done()) break;
    for (StreamState* stream : closure.order) {
      if (stream->pending.empty()) continue;
      const NodePtr& head = stream->pending.front();
      if (head->running) {
        (head->host_call ? waiting : waiting_on_self) = true;
        continue;
      }
      if (head->seq > closure.limits[stream].seq || !deps_done(*head)) continue;
      if (head->work.ready && sticky_error(stream->device) == cudaSuccess && !head->work.ready()) {
        waiting = true;
        continue;
      }
      candidates.push_back(head);
    }
    if (candidates.empty()) {
      if (!waiting) {
        std::fprintf(stderr, "sonata emu: %s\n",
                     waiting_on_self ? "a piece of work waits for work ordered after itself "
                                       "(a synchronisation inside work)"
                                     : "internal error: no runnable work for a wait");
        return false;
      }
      if (max_steps != 0) return false;  // a query does not wait for peers
      pause_holding_lock();
      continue;
    }
    const NodePtr chosen = candidates[choose(candidates)];
    run_node(chosen);
    if (max_steps != 0 && ++steps >= max_steps) break;
  }
  return all_done();
}

bool query_done(const std::vector<NodePtr>& targets) {
  const bool done_when_asked =
      std::all_of(targets.begin(), targets.end(), [](const NodePtr& t) { return !t || t->done; });
  if (!done_when_asked) run_until(targets, kQuerySteps);
  return done_when_asked;
}

bool in_host_function() {
  return t_in_host_function;
}

void set_seed(uint64_t seed) {
  ExecLock lock;
  registry().rng.seed(seed);
}

// device_work.h

cudaError_t enqueue(cudaStream_t stream, Work work) {
  if (t_in_host_function) {
    std::fprintf(stderr, "sonata emu: %s enqueued from inside a host function (refused)\n",
                 work.name.c_str());
    return cudaErrorNotPermitted;
  }
  ExecLock lock;
  StreamState* state = nullptr;
  try {
    current_device();  // the selection rule, whichever stream the work goes to
    state = resolve_stream(stream);
  } catch (const UsageError& refusal) {
    std::fprintf(stderr, "sonata emu: %s: %s\n", work.name.c_str(), refusal.what());
    return cudaErrorDeviceUninitialized;
  }
  if (!state) return cudaErrorInvalidResourceHandle;
  if (const cudaError_t sticky = sticky_error(state->device); sticky != cudaSuccess) return sticky;
  enqueue_node(state, std::move(work));
  return cudaSuccess;
}

int stream_device(cudaStream_t stream) {
  ExecLock lock;
  StreamState* state = resolve_stream(stream);
  return state ? state->device : -1;
}

void report_device_fault(cudaError_t error, const std::string& message) {
  ExecLock lock;
  if (t_running) {
    set_sticky_error(t_running->stream->device, error, t_running->work.name + ": " + message);
  } else {
    set_sticky_error(thread_device(), error, message);
  }
}

void enqueue_host_function(StreamState* stream, cudaHostFn_t fn, void* user_data) {
  Work work;
  work.name = "host function";
  work.kind = WorkKind::host_function;
  work.run = [fn, user_data] {
    t_in_host_function = true;  // on the callback thread: CUDA calls are refused there
    fn(user_data);
  };
  NodePtr node = enqueue_node(stream, std::move(work));
  node->host_function = true;
}

}  // namespace sonata::emu

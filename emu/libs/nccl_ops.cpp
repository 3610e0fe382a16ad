// The emulated NCCL's operations, as the work of their stream. A rank publishes each
// contribution (collectives) or message (sends) in a shared-memory segment of its own and
// fetches its peers' as they appear, all from the work's readiness test, which never blocks:
// the scheduler polls it while it drives the devices, so ranks that are threads of one
// process make progress together, and ranks in other processes meet through the segments.
// Collectives of a communicator are numbered in issue order and checked against every
// peer's (kind, count, type, operation, root); reductions run in rank order, so every rank
// gets the same bits.
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

#include "emu/libs/nccl_comm.h"
#include "emu/libs/nccl_wait.h"
#include "emu/libs/numeric.h"

namespace sonata::emu::nccl {
namespace {

// ---------------------------------------------------------------------------------------
// Reductions, element by element in rank order, in the element type's own arithmetic (fp16
// and bf16 rounded after every step, as NCCL's kernels add them).

template <typename T>
T combine(T a, T b, ncclRedOp_t op) {
  switch (op) {
    case ncclProd:
      if constexpr (std::is_integral_v<T>)
        return T(std::make_unsigned_t<T>(a) * std::make_unsigned_t<T>(b));
      else
        return a * b;
    case ncclMax:
      return a > b ? a : b;
    case ncclMin:
      return a < b ? a : b;
    default:  // sum, avg
      if constexpr (std::is_integral_v<T>)
        return T(std::make_unsigned_t<T>(a) + std::make_unsigned_t<T>(b));
      else
        return a + b;
  }
}

template <typename T>
void reduce_typed(const std::vector<const char*>& inputs, char* out, size_t count, ncclRedOp_t op) {
  const int n = int(inputs.size());
  for (size_t i = 0; i < count; ++i) {
    T acc;
    std::memcpy(&acc, inputs[0] + i * sizeof(T), sizeof(T));
    for (int r = 1; r < n; ++r) {
      T value;
      std::memcpy(&value, inputs[size_t(r)] + i * sizeof(T), sizeof(T));
      acc = combine(acc, value, op);
    }
    if (op == ncclAvg) acc = T(acc / T(n));
    std::memcpy(out + i * sizeof(T), &acc, sizeof(T));
  }
}

void reduce_16(const std::vector<const char*>& inputs, char* out, size_t count, ncclRedOp_t op,
               bool bf16) {
  auto load = [bf16](const char* p) {
    uint16_t bits;
    std::memcpy(&bits, p, 2);
    return bf16 ? bf16_to_float(bits) : half_to_float(bits);
  };
  auto round = [bf16](float v) {
    return bf16 ? bf16_to_float(float_to_bf16(v)) : half_to_float(float_to_half(v));
  };
  const int n = int(inputs.size());
  for (size_t i = 0; i < count; ++i) {
    float acc = load(inputs[0] + 2 * i);
    for (int r = 1; r < n; ++r) acc = round(combine(acc, load(inputs[size_t(r)] + 2 * i), op));
    if (op == ncclAvg) acc = round(acc / float(n));
    const uint16_t bits = bf16 ? float_to_bf16(acc) : float_to_half(acc);
    std::memcpy(out + 2 * i, &bits, 2);
  }
}

void reduce(ncclDataType_t dtype, const std::vector<const char*>& inputs, char* out, size_t count,
            ncclRedOp_t op) {
  switch (dtype) {
    case ncclInt8:
      return reduce_typed<int8_t>(inputs, out, count, op);
    case ncclUint8:
      return reduce_typed<uint8_t>(inputs, out, count, op);
    case ncclInt32:
      return reduce_typed<int32_t>(inputs, out, count, op);
    case ncclUint32:
      return reduce_typed<uint32_t>(inputs, out, count, op);
    case ncclInt64:
      return reduce_typed<int64_t>(inputs, out, count, op);
    case ncclUint64:
      return reduce_typed<uint64_t>(inputs, out, count, op);
    case ncclFloat32:
      return reduce_typed<float>(inputs, out, count, op);
    case ncclFloat64:
      return reduce_typed<double>(inputs, out, count, op);
    case ncclFloat16:
      return reduce_16(inputs, out, count, op, false);
    case ncclBfloat16:
      return reduce_16(inputs, out, count, op, true);
    default:
      return;
  }
}

// ---------------------------------------------------------------------------------------

bool rooted(OpKind kind) {
  return kind == OpKind::broadcast || kind == OpKind::reduce;
}
bool reducing(OpKind kind) {
  return kind == OpKind::all_reduce || kind == OpKind::reduce || kind == OpKind::reduce_scatter;
}
bool p2p(OpKind kind) {
  return kind == OpKind::send || kind == OpKind::recv;
}

OpDesc desc_of(const Op& op) {
  OpDesc d;
  d.kind = int32_t(op.kind);
  d.dtype = int32_t(op.dtype);
  d.redop = int32_t(op.redop);
  d.root = op.root;
  d.count = op.count;
  d.seq = op.seq;
  return d;
}

Op op_of(const OpDesc& d) {
  Op op;
  op.kind = OpKind(d.kind);
  op.dtype = ncclDataType_t(d.dtype);
  op.redop = ncclRedOp_t(d.redop);
  op.root = d.root;
  op.count = d.count;
  op.seq = d.seq;
  return op;
}

bool same(const OpDesc& a, const OpDesc& b) {
  if (a.kind != b.kind || a.count != b.count || a.dtype != b.dtype) return false;
  if (reducing(OpKind(a.kind)) && a.redop != b.redop) return false;
  if (rooted(OpKind(a.kind)) && a.root != b.root) return false;
  return true;
}

std::string segment_name(const CommState& comm, uint64_t seq, int rank) {
  return comm.name + "_c" + std::to_string(seq) + "_r" + std::to_string(rank);
}
std::string message_name(const CommState& comm, int from, int to, uint64_t seq) {
  return comm.name + "_p" + std::to_string(from) + "_" + std::to_string(to) + "_" +
         std::to_string(seq);
}

// Publishes `bytes` at `data` for `readers` readers; false with `error` set on failure.
bool publish(const std::string& name, const void* data, size_t bytes, int readers,
             std::string* error) {
  Segment segment = Segment::create(name, kPayloadOffset + bytes, true, error);
  if (!segment) return false;
  auto* header = static_cast<SegmentHeader*>(segment.data());
  header->readers.store(readers);
  if (bytes > 0) std::memcpy(static_cast<char*>(segment.data()) + kPayloadOffset, data, bytes);
  return true;
}

// Copies a published segment's data and counts this reader; the last reader removes it.
bool fetch(const std::string& name, std::vector<char>* out, size_t bytes, std::string* error) {
  const Segment segment = Segment::open(name, true, error);
  if (!segment) return false;
  if (segment.size() < kPayloadOffset + bytes) {
    *error = name + " holds " + std::to_string(segment.size() - kPayloadOffset) +
             " bytes, not the " + std::to_string(bytes) + " expected";
    return false;
  }
  const char* payload = static_cast<const char*>(segment.data()) + kPayloadOffset;
  out->assign(payload, payload + bytes);
  if (static_cast<SegmentHeader*>(segment.data())->readers.fetch_sub(1) == 1) Segment::unlink(name);
  return true;
}

}  // namespace

// One NCCL operation (or group) in progress per device at a time, in the order the device
// started them: the least convenient legal case of a card, where a collective's kernel keeps
// the SMs until its peers join, so a second communicator's kernel behind it cannot start.
// Two communicators used on one device in different orders on two ranks then deadlock, as
// NCCL's user guide warns, and show as a timeout naming both operations.
// SONATA_EMU_NCCL_CONCURRENT=1 lets them run side by side instead.
struct DeviceSlots {
  std::mutex mutex;
  std::map<int, const void*> holder;
  std::map<int, std::string> what;
};
DeviceSlots& device_slots() {
  static auto* slots = new DeviceSlots;
  return *slots;
}
bool concurrent_communicators() {
  const char* value = std::getenv("SONATA_EMU_NCCL_CONCURRENT");
  return value && std::string(value) == "1";
}

struct OpsInFlight::Impl {
  std::shared_ptr<CommState> comm;
  std::vector<Op> ops;
  bool holds_device = false;
  std::string blocked_by;  // what held the device while this work could not start

  // False (noting the holder) while another operation holds this rank's device.
  bool acquire_device() {
    if (holds_device || concurrent_communicators()) return true;
    DeviceSlots& slots = device_slots();
    const std::lock_guard<std::mutex> lock(slots.mutex);
    const void*& holder = slots.holder[comm->device];
    if (holder && holder != this) {
      blocked_by = slots.what[comm->device];
      return false;
    }
    holder = this;
    slots.what[comm->device] = describe(ops.front()) + " of communicator " + comm->name;
    holds_device = true;
    announce_device(comm->device, slots.what[comm->device]);
    return true;
  }
  void release_device() {
    if (!holds_device) return;
    DeviceSlots& slots = device_slots();
    const std::lock_guard<std::mutex> lock(slots.mutex);
    if (slots.holder[comm->device] == this) {
      slots.holder.erase(comm->device);
      announce_device(comm->device, "");
    }
    holds_device = false;
  }
  ~Impl() { release_device(); }
  struct Progress {
    bool posted = false;                    // sends and collectives: published
    bool complete = false;                  // everything this rank needs from its peers arrived
    std::vector<std::vector<char>> inputs;  // collectives: every rank's contribution
    std::vector<bool> have;
    std::vector<char> received;  // receives
    std::string published;       // the segment this rank created, removed on failure
  };
  std::vector<Progress> progress;
  size_t next_collective = 0;  // index into ops of the first incomplete collective
  bool started = false, done = false, skip = false;
  std::chrono::steady_clock::time_point deadline;
  double timeout_s = 60;
  ncclResult_t failure_code = ncclSuccess;
  std::string failure;

  std::string where() const {
    return " on rank " + std::to_string(comm->rank) + " (device " + std::to_string(comm->device) +
           ")";
  }
  void fail(ncclResult_t code, const std::string& message) {
    failure_code = code;
    failure = message;
    done = true;
  }
  size_t contribution_bytes(const Op& op) const {
    const size_t eb = dtype_bytes(op.dtype);
    if (op.kind == OpKind::broadcast) return comm->rank == op.root ? op.count * eb : 0;
    if (op.kind == OpKind::reduce_scatter) return op.count * eb * size_t(comm->nranks);
    return op.count * eb;
  }
  size_t peer_bytes(const Op& op, int peer) const {
    const size_t eb = dtype_bytes(op.dtype);
    if (op.kind == OpKind::broadcast) return peer == op.root ? op.count * eb : 0;
    if (op.kind == OpKind::reduce_scatter) return op.count * eb * size_t(comm->nranks);
    return op.count * eb;
  }

  void post_sends() {
    for (size_t i = 0; i < ops.size() && !done; ++i) {
      const Op& op = ops[i];
      Progress& p = progress[i];
      if (op.kind != OpKind::send || p.posted) continue;
      PairSlot* pair = comm->pair(comm->rank, op.root);
      // In order per pair, and no more than the ring holds in flight.
      if (pair->posted.load() + 1 < op.seq || op.seq - pair->consumed.load() > uint64_t(kRing))
        continue;
      std::string error;
      p.published = message_name(*comm, comm->rank, op.root, op.seq);
      if (!publish(p.published, op.send, op.count * dtype_bytes(op.dtype), 1, &error))
        return fail(ncclSystemError, describe(op) + where() + ": " + error);
      pair->ring[op.seq % kRing] = desc_of(op);
      pair->posted.store(op.seq);
      p.posted = true;
    }
  }

  void fetch_receives() {
    for (size_t i = 0; i < ops.size() && !done; ++i) {
      const Op& op = ops[i];
      Progress& p = progress[i];
      if (op.kind != OpKind::recv || p.complete) continue;
      PairSlot* pair = comm->pair(op.root, comm->rank);
      if (pair->posted.load() < op.seq) continue;
      const Op sent = op_of(pair->ring[op.seq % kRing]);
      const std::string name = message_name(*comm, op.root, comm->rank, op.seq);
      if (sent.count != op.count || sent.dtype != op.dtype) {
        Segment::unlink(name);
        pair->consumed.store(op.seq);
        return fail(ncclInvalidUsage, describe(op) + where() + " does not match " + describe(sent) +
                                          " on rank " + std::to_string(op.root) +
                                          " (a send and its receive need the same count and type)");
      }
      std::string error;
      if (!fetch(name, &p.received, op.count * dtype_bytes(op.dtype), &error))
        return fail(ncclSystemError, describe(op) + where() + ": " + error);
      pair->consumed.store(op.seq);
      p.complete = true;
    }
  }

  void progress_collectives() {
    RankSlot* mine = comm->slot(comm->rank);
    while (!done) {
      while (next_collective < ops.size() && p2p(ops[next_collective].kind)) ++next_collective;
      if (next_collective >= ops.size()) return;
      const Op& op = ops[next_collective];
      Progress& p = progress[next_collective];
      const uint64_t s = op.seq;
      if (!p.posted) {
        // Collectives of a communicator run in issue order, and no rank runs a ring ahead.
        if (mine->op_done.load() + 1 < s) return;
        for (int r = 0; r < comm->nranks; ++r)
          if (comm->slot(r)->op_done.load() + uint64_t(kRing) < s) return;
        const size_t bytes = contribution_bytes(op);
        p.inputs.assign(size_t(comm->nranks), {});
        p.have.assign(size_t(comm->nranks), false);
        if (bytes > 0) {
          std::string error;
          if (comm->nranks > 1) p.published = segment_name(*comm, s, comm->rank);
          if (comm->nranks > 1 && !publish(p.published, op.send, bytes, comm->nranks - 1, &error))
            return fail(ncclSystemError, describe(op) + where() + ": " + error);
          // This rank's own contribution, copied now: the send buffer may be the output.
          const auto* data = static_cast<const char*>(op.send);
          p.inputs[size_t(comm->rank)].assign(data, data + bytes);
        }
        p.have[size_t(comm->rank)] = true;
        mine->ops[s % kRing] = desc_of(op);
        mine->op_posted.store(s);
        p.posted = true;
      }
      for (int r = 0; r < comm->nranks && !done; ++r) {
        if (p.have[size_t(r)]) continue;
        RankSlot* peer = comm->slot(r);
        if (peer->op_posted.load() < s) continue;
        const OpDesc theirs = peer->ops[s % kRing];
        if (!same(theirs, desc_of(op)))
          return fail(ncclInvalidUsage,
                      describe(op) + where() + " does not match " + describe(op_of(theirs)) +
                          " on rank " + std::to_string(r) +
                          " (every rank must issue the same collectives, with the same count, "
                          "type, operation and root, in the same order)");
        const size_t bytes = peer_bytes(op, r);
        if (bytes > 0) {
          std::string error;
          if (!fetch(segment_name(*comm, s, r), &p.inputs[size_t(r)], bytes, &error))
            return fail(ncclSystemError, describe(op) + where() + ": rank " + std::to_string(r) +
                                             "'s contribution is gone (" + peer_state(*comm, r) +
                                             "; " + error + ")");
        }
        p.have[size_t(r)] = true;
      }
      for (const bool have : p.have)
        if (!have) return;
      p.complete = true;
      mine->op_done.store(s);
      ++next_collective;
    }
  }

  bool sends_delivered() const {
    for (const Op& op : ops)
      if (op.kind == OpKind::send && comm->pair(comm->rank, op.root)->consumed.load() < op.seq)
        return false;
    return true;
  }

  bool complete() const {
    for (size_t i = 0; i < ops.size(); ++i)
      if (ops[i].kind != OpKind::send && !progress[i].complete) return false;
    return sends_delivered();
  }

  // The timeout's message: the first operation still waiting and what its peer(s) were doing.
  std::string stalled() {
    RankSlot* mine = comm->slot(comm->rank);
    for (size_t i = 0; i < ops.size(); ++i) {
      const Op& op = ops[i];
      const Progress& p = progress[i];
      if (op.kind == OpKind::recv && !p.complete)
        return describe(op) + where() + ": " + wait_failure(*comm, WaitResult::timeout, timeout_s) +
               "; " + peer_state(*comm, op.root) + " and never sent the matching message";
      if (op.kind == OpKind::send && comm->pair(comm->rank, op.root)->consumed.load() < op.seq)
        return describe(op) + where() + ": " + wait_failure(*comm, WaitResult::timeout, timeout_s) +
               "; " + peer_state(*comm, op.root) + " and never received it (no matching ncclRecv)";
      if (!p2p(op.kind) && !p.complete) {
        std::string text = describe(op) + where() + ": " +
                           wait_failure(*comm, WaitResult::timeout, timeout_s) + "; ";
        if (!p.posted)
          return text + "it could not start: the communicator's collective #" +
                 std::to_string(op.seq - 1) + " had not run on this rank (operations of one " +
                 "communicator issued on several streams ran out of issue order)";
        std::string missing;
        for (int r = 0; r < comm->nranks; ++r)
          if (!p.have[size_t(r)])
            missing +=
                (missing.empty() ? "" : "; ") + peer_state(*comm, r) + " and never posted it";
        return text + missing;
      }
    }
    (void)mine;
    return "NCCL work" + where() + ": timed out";
  }
};

OpsInFlight::OpsInFlight(std::shared_ptr<CommState> comm, std::vector<Op> ops)
    : impl_(std::make_unique<Impl>()) {
  impl_->comm = std::move(comm);
  impl_->ops = std::move(ops);
  impl_->progress.resize(impl_->ops.size());
}

OpsInFlight::~OpsInFlight() = default;

bool OpsInFlight::poll() {
  Impl& m = *impl_;
  if (m.done) return true;
  CommState& comm = *m.comm;
  if (!m.started) {
    m.started = true;
    m.timeout_s = timeout_seconds();
    m.deadline = std::chrono::steady_clock::now() +
                 std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                     std::chrono::duration<double>(m.timeout_s));
    if (comm.aborted.load() || comm.destroyed.load()) {
      m.release_device();
      m.fail(ncclInvalidUsage, describe(m.ops.front()) + m.where() + ": the communicator was " +
                                   (comm.aborted.load() ? "aborted" : "destroyed") +
                                   " before this work ran");
      return true;
    }
    // After an error the communicator is unusable, as NCCL's is: the work does nothing.
    if (comm.async_error.load() != ncclSuccess) {
      m.skip = m.done = true;
      return true;
    }
    set_text(comm.slot(comm.rank),
             "in " + describe(m.ops.front()) +
                 (m.ops.size() > 1 ? " (a group of " + std::to_string(m.ops.size()) + ")" : ""));
  }
  if (comm.aborted.load() || (comm.control && comm.header()->aborted_by.load() != 0)) {
    const WaitResult why = comm.aborted.load() ? WaitResult::aborted : WaitResult::peer_aborted;
    m.fail(why == WaitResult::aborted ? ncclInvalidUsage : ncclRemoteError,
           describe(m.ops.front()) + m.where() + ": " + wait_failure(comm, why, m.timeout_s));
    m.release_device();
    return true;
  }
  if (!m.acquire_device()) {
    if (std::chrono::steady_clock::now() < m.deadline) return false;
    m.fail(ncclSystemError,
           describe(m.ops.front()) + m.where() + ": " +
               wait_failure(comm, WaitResult::timeout, m.timeout_s) +
               "; it could not start: its device was running " + m.blocked_by +
               " (NCCL operations of two communicators on one device must be issued in the same "
               "order on every rank, or they can deadlock)");
    return true;
  }
  m.post_sends();
  m.fetch_receives();
  m.progress_collectives();
  if (!m.done && m.complete()) m.done = true;
  if (!m.done && std::chrono::steady_clock::now() >= m.deadline)
    m.fail(ncclSystemError, m.stalled());
  if (m.done) m.release_device();
  return m.done;
}

void OpsInFlight::run() {
  Impl& m = *impl_;
  // A runtime that runs work without asking whether it is ready gets the wait here.
  while (!poll()) std::this_thread::sleep_for(std::chrono::microseconds(100));
  CommState& comm = *m.comm;
  if (m.skip) return;
  if (!m.failure.empty()) {
    for (const auto& p : m.progress)
      if (!p.published.empty()) Segment::unlink(p.published);
    set_text(comm.slot(comm.rank), "failed in " + describe(m.ops.front()));
    comm.record_error(m.failure_code, m.failure);
    return;
  }
  for (size_t i = 0; i < m.ops.size(); ++i) {
    const Op& op = m.ops[i];
    Impl::Progress& p = m.progress[i];
    const size_t eb = dtype_bytes(op.dtype);
    auto* out = static_cast<char*>(op.recv);
    std::vector<const char*> inputs;
    for (const auto& input : p.inputs) inputs.push_back(input.data());
    switch (op.kind) {
      case OpKind::all_reduce:
        reduce(op.dtype, inputs, out, op.count, op.redop);
        break;
      case OpKind::reduce:
        if (comm.rank == op.root) reduce(op.dtype, inputs, out, op.count, op.redop);
        break;
      case OpKind::broadcast:
        if (op.count > 0) std::memcpy(out, inputs[size_t(op.root)], op.count * eb);
        break;
      case OpKind::reduce_scatter:
        for (auto& block : inputs) block += size_t(comm.rank) * op.count * eb;
        reduce(op.dtype, inputs, out, op.count, op.redop);
        break;
      case OpKind::all_gather:
        for (int r = 0; r < comm.nranks; ++r)
          if (op.count > 0)
            std::memcpy(out + size_t(r) * op.count * eb, inputs[size_t(r)], op.count * eb);
        break;
      case OpKind::recv:
        if (!p.received.empty()) std::memcpy(out, p.received.data(), p.received.size());
        break;
      default:
        break;
    }
  }
  set_text(comm.slot(comm.rank), "idle after " + describe(m.ops.back()));
}

}  // namespace sonata::emu::nccl

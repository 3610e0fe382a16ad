// The emulated NCCL's operations, run as the work of their stream: each rank publishes its
// contribution in a segment of its own, waits (bounded) until every peer has posted the
// same operation, checks that they match, computes its own result from all contributions
// (reductions in rank order, so every rank gets the same bits), then waits until every peer
// has read before removing its segment. Point-to-point messages go through a ring per
// ordered pair of ranks.
#include <cstring>
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

std::string where(const CommState& comm) {
  return " on rank " + std::to_string(comm.rank) + " (device " + std::to_string(comm.device) + ")";
}

bool rooted(OpKind kind) {
  return kind == OpKind::broadcast || kind == OpKind::reduce;
}
bool reducing(OpKind kind) {
  return kind == OpKind::all_reduce || kind == OpKind::reduce || kind == OpKind::reduce_scatter;
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

// This rank's contribution to a collective: the bytes its peers read.
std::pair<const void*, size_t> contribution(const CommState& comm, const Op& op) {
  const size_t eb = dtype_bytes(op.dtype);
  switch (op.kind) {
    case OpKind::broadcast:
      return comm.rank == op.root ? std::make_pair(op.send, op.count * eb)
                                  : std::make_pair(static_cast<const void*>(nullptr), size_t(0));
    case OpKind::reduce_scatter:
      return {op.send, op.count * eb * size_t(comm.nranks)};
    default:
      return {op.send, op.count * eb};
  }
}

// False (with the error recorded) when the collective failed.
bool run_collective(const std::shared_ptr<CommState>& comm_ptr, const Op& op) {
  CommState& comm = *comm_ptr;
  const uint64_t s = op.seq;
  const std::string what = describe(op) + where(comm);
  const double timeout_s = timeout_seconds();
  RankSlot* mine = comm.slot(comm.rank);
  set_text(mine, "in " + describe(op));
  // Operations of one communicator run in issue order; on several streams they may not.
  const WaitResult in_order = wait_until(
      comm, [&] { return mine->op_done.load() + 1 >= s; }, timeout_s);
  if (in_order != WaitResult::ok) {
    comm.record_error(ncclInvalidUsage,
                      what + " ran before the communicator's earlier collective #" +
                          std::to_string(s - 1) + " finished (" +
                          wait_failure(comm, in_order, timeout_s) +
                          "): operations of one communicator issued on several streams ran out "
                          "of issue order");
    return false;
  }
  // Publish this rank's contribution.
  const auto [data, bytes] = contribution(comm, op);
  const std::string mine_name = segment_name(comm, s, comm.rank);
  Segment own;
  if (bytes > 0) {
    std::string error;
    own = Segment::create(mine_name, bytes, true, &error);
    if (!own) {
      comm.record_error(ncclSystemError, what + ": " + error);
      return false;
    }
    std::memcpy(own.data(), data, bytes);
  }
  mine->op = desc_of(op);
  mine->op_posted.store(s);
  auto finish = [&](bool ok) {
    mine->op_done.store(s);
    if (bytes > 0) Segment::unlink(mine_name);
    set_text(mine, std::string(ok ? "idle after " : "failed in ") + describe(op));
    return ok;
  };

  const WaitResult posted = wait_until(
      comm,
      [&] {
        for (int r = 0; r < comm.nranks; ++r)
          if (comm.slot(r)->op_posted.load() < s) return false;
        return true;
      },
      timeout_s);
  if (posted != WaitResult::ok) {
    std::string missing;
    for (int r = 0; r < comm.nranks; ++r)
      if (comm.slot(r)->op_posted.load() < s)
        missing += (missing.empty() ? "" : "; ") + peer_state(comm, r) + " and never posted it";
    comm.record_error(posted == WaitResult::timeout ? ncclSystemError : ncclRemoteError,
                      what + ": " + wait_failure(comm, posted, timeout_s) + "; " + missing);
    return finish(false);
  }
  const OpDesc expected = desc_of(op);
  for (int r = 0; r < comm.nranks; ++r) {
    const OpDesc theirs = comm.slot(r)->op;
    if (!same(theirs, expected)) {
      comm.record_error(ncclInvalidUsage,
                        what + " does not match " + describe(op_of(theirs)) + " on rank " +
                            std::to_string(r) +
                            " (every rank must issue the same collectives, with the same count, "
                            "type, operation and root, in the same order)");
      return finish(false);
    }
  }

  // Everyone's contribution, this rank's from its own segment (the send buffer may be the
  // receive buffer).
  std::vector<Segment> peers(size_t(comm.nranks));
  std::vector<const char*> inputs(size_t(comm.nranks), nullptr);
  for (int r = 0; r < comm.nranks; ++r) {
    if (op.kind == OpKind::broadcast && r != op.root) continue;
    if (r == comm.rank) {
      inputs[size_t(r)] = static_cast<const char*>(own.data());
      continue;
    }
    std::string error;
    peers[size_t(r)] = Segment::open_read(segment_name(comm, s, r), &error);
    if (!peers[size_t(r)]) {
      comm.record_error(ncclSystemError,
                        what + ": rank " + std::to_string(r) + "'s data: " + error);
      return finish(false);
    }
    inputs[size_t(r)] = static_cast<const char*>(peers[size_t(r)].data());
  }
  const size_t eb = dtype_bytes(op.dtype);
  auto* out = static_cast<char*>(op.recv);
  switch (op.kind) {
    case OpKind::all_reduce:
      reduce(op.dtype, inputs, out, op.count, op.redop);
      break;
    case OpKind::reduce:
      if (comm.rank == op.root) reduce(op.dtype, inputs, out, op.count, op.redop);
      break;
    case OpKind::broadcast:
      std::memcpy(out, inputs[size_t(op.root)], op.count * eb);
      break;
    case OpKind::reduce_scatter: {
      std::vector<const char*> blocks(inputs);
      for (auto& block : blocks) block += size_t(comm.rank) * op.count * eb;
      reduce(op.dtype, blocks, out, op.count, op.redop);
      break;
    }
    case OpKind::all_gather:
      for (int r = 0; r < comm.nranks; ++r)
        std::memcpy(out + size_t(r) * op.count * eb, inputs[size_t(r)], op.count * eb);
      break;
    default:
      break;
  }
  peers.clear();
  mine->op_done.store(s);
  const WaitResult read = wait_until(
      comm,
      [&] {
        for (int r = 0; r < comm.nranks; ++r)
          if (comm.slot(r)->op_done.load() < s) return false;
        return true;
      },
      timeout_s);
  if (read != WaitResult::ok) {
    std::string missing;
    for (int r = 0; r < comm.nranks; ++r)
      if (comm.slot(r)->op_done.load() < s)
        missing += (missing.empty() ? "" : "; ") + peer_state(comm, r);
    comm.record_error(ncclSystemError, what + " (waiting for peers to finish reading): " +
                                           wait_failure(comm, read, timeout_s) + "; " + missing);
    return finish(false);
  }
  return finish(true);
}

bool post_send(CommState& comm, const Op& op) {
  const int peer = op.root;
  const uint64_t s = op.seq;
  const std::string what = describe(op) + where(comm);
  const double timeout_s = timeout_seconds();
  PairSlot* pair = comm.pair(comm.rank, peer);
  const WaitResult room = wait_until(
      comm,
      [&] { return pair->posted.load() + 1 >= s && s - pair->consumed.load() <= uint64_t(kRing); },
      timeout_s);
  if (room != WaitResult::ok) {
    comm.record_error(ncclSystemError, what + ": " + wait_failure(comm, room, timeout_s) +
                                           " with " + std::to_string(kRing) + " messages to rank " +
                                           std::to_string(peer) + " unreceived; " +
                                           peer_state(comm, peer));
    return false;
  }
  const size_t bytes = op.count * dtype_bytes(op.dtype);
  std::string error;
  Segment message = Segment::create(message_name(comm, comm.rank, peer, s), bytes, true, &error);
  if (!message) {
    comm.record_error(ncclSystemError, what + ": " + error);
    return false;
  }
  if (bytes > 0) std::memcpy(message.data(), op.send, bytes);
  pair->ring[s % kRing] = desc_of(op);
  pair->posted.store(s);
  return true;
}

bool complete_recv(CommState& comm, const Op& op) {
  const int peer = op.root;
  const uint64_t s = op.seq;
  const std::string what = describe(op) + where(comm);
  const double timeout_s = timeout_seconds();
  PairSlot* pair = comm.pair(peer, comm.rank);
  const WaitResult arrived = wait_until(
      comm, [&] { return pair->posted.load() >= s; }, timeout_s);
  if (arrived != WaitResult::ok) {
    comm.record_error(ncclSystemError, what + ": " + wait_failure(comm, arrived, timeout_s) + "; " +
                                           peer_state(comm, peer) +
                                           " and never sent the matching message");
    return false;
  }
  const Op sent = op_of(pair->ring[s % kRing]);
  const std::string name = message_name(comm, peer, comm.rank, s);
  if (sent.count != op.count || sent.dtype != op.dtype) {
    comm.record_error(ncclInvalidUsage,
                      what + " does not match " + describe(sent) + " on rank " +
                          std::to_string(peer) +
                          " (a send and its receive need the same count and type)");
    Segment::unlink(name);
    pair->consumed.store(s);
    return false;
  }
  std::string error;
  const Segment message = Segment::open_read(name, &error);
  if (!message) {
    comm.record_error(ncclSystemError, what + ": " + error);
    return false;
  }
  const size_t bytes = op.count * dtype_bytes(op.dtype);
  if (bytes > 0) std::memcpy(op.recv, message.data(), bytes);
  Segment::unlink(name);
  pair->consumed.store(s);
  return true;
}

bool wait_sent(CommState& comm, const Op& op) {
  const double timeout_s = timeout_seconds();
  PairSlot* pair = comm.pair(comm.rank, op.root);
  const WaitResult received = wait_until(
      comm, [&] { return pair->consumed.load() >= op.seq; }, timeout_s);
  if (received == WaitResult::ok) return true;
  comm.record_error(ncclSystemError, describe(op) + where(comm) + ": " +
                                         wait_failure(comm, received, timeout_s) + "; " +
                                         peer_state(comm, op.root) +
                                         " and never received it (no matching ncclRecv)");
  return false;
}

}  // namespace

void run_ops(const std::shared_ptr<CommState>& comm_ptr, const std::vector<Op>& ops) {
  CommState& comm = *comm_ptr;
  if (ops.empty()) return;
  if (comm.aborted.load() || comm.destroyed.load()) {
    comm.record_error(ncclInvalidUsage, describe(ops.front()) + where(comm) +
                                            ": the communicator was " +
                                            (comm.aborted.load() ? "aborted" : "destroyed") +
                                            " before this work ran");
    return;
  }
  // After an error the communicator is unusable, as NCCL's is.
  if (comm.async_error.load() != ncclSuccess) return;
  RankSlot* mine = comm.slot(comm.rank);
  for (const Op& op : ops)
    if (op.kind == OpKind::send) {
      set_text(mine, "in " + describe(op));
      if (!post_send(comm, op)) return;
    }
  for (const Op& op : ops)
    if (op.kind != OpKind::send && op.kind != OpKind::recv)
      if (!run_collective(comm_ptr, op)) return;
  for (const Op& op : ops)
    if (op.kind == OpKind::recv) {
      set_text(mine, "in " + describe(op));
      if (!complete_recv(comm, op)) return;
    }
  for (const Op& op : ops)
    if (op.kind == OpKind::send) {
      set_text(mine, "in " + describe(op) + " (waiting for rank " + std::to_string(op.root) +
                         " to receive it)");
      if (!wait_sent(comm, op)) return;
    }
  set_text(mine, "idle after " + describe(ops.back()));
}

}  // namespace sonata::emu::nccl

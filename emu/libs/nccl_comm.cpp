// The emulated NCCL's communicators: joining and leaving the shared control block, the
// host-side exchange of ncclCommSplit, errors, and the bounded waits every rendezvous uses.
#include "emu/libs/nccl_comm.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "emu/libs/internal.h"
#include "emu/libs/nccl_wait.h"

namespace sonata::emu::nccl {

double timeout_seconds() {
  return env_positive("SONATA_EMU_NCCL_TIMEOUT_S", 60.0);
}

void CommState::record_error(ncclResult_t error, const std::string& message) {
  {
    const std::lock_guard<std::mutex> lock(mutex);
    if (error_text.empty()) error_text = message;
  }
  int expected = ncclSuccess;
  async_error.compare_exchange_strong(expected, int(error));
  library_log("NCCL", message);
}

std::string CommState::last_error() {
  const std::lock_guard<std::mutex> lock(mutex);
  return error_text;
}

size_t dtype_bytes(ncclDataType_t dtype) {
  switch (dtype) {
    case ncclInt8:
    case ncclUint8:
      return 1;
    case ncclFloat16:
    case ncclBfloat16:
      return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32:
      return 4;
    case ncclInt64:
    case ncclUint64:
    case ncclFloat64:
      return 8;
    default:
      return 0;
  }
}

const char* dtype_name(ncclDataType_t dtype) {
  switch (dtype) {
    case ncclInt8:
      return "int8";
    case ncclUint8:
      return "uint8";
    case ncclInt32:
      return "int32";
    case ncclUint32:
      return "uint32";
    case ncclInt64:
      return "int64";
    case ncclUint64:
      return "uint64";
    case ncclFloat16:
      return "float16";
    case ncclFloat32:
      return "float32";
    case ncclFloat64:
      return "float64";
    case ncclBfloat16:
      return "bfloat16";
    default:
      return "unsupported type";
  }
}

const char* op_name(OpKind kind) {
  switch (kind) {
    case OpKind::all_reduce:
      return "ncclAllReduce";
    case OpKind::broadcast:
      return "ncclBroadcast";
    case OpKind::reduce:
      return "ncclReduce";
    case OpKind::reduce_scatter:
      return "ncclReduceScatter";
    case OpKind::all_gather:
      return "ncclAllGather";
    case OpKind::send:
      return "ncclSend";
    case OpKind::recv:
      return "ncclRecv";
    case OpKind::none:
      break;
  }
  return "nothing";
}

std::string describe(const Op& op) {
  static const char* redops[] = {"sum", "prod", "max", "min", "avg"};
  std::string text = std::string(op_name(op.kind)) + " #" + std::to_string(op.seq) + " (" +
                     std::to_string(op.count) + " " + dtype_name(op.dtype);
  if (op.kind == OpKind::all_reduce || op.kind == OpKind::reduce ||
      op.kind == OpKind::reduce_scatter)
    text += std::string(", ") + (op.redop >= 0 && op.redop < 5 ? redops[op.redop] : "?");
  if (op.kind == OpKind::broadcast || op.kind == OpKind::reduce)
    text += ", root " + std::to_string(op.root);
  if (op.kind == OpKind::send) text += ", to rank " + std::to_string(op.root);
  if (op.kind == OpKind::recv) text += ", from rank " + std::to_string(op.root);
  return text + ")";
}

WaitResult wait_until(CommState& comm, const std::function<bool()>& ready, double timeout_s) {
  if (ready()) return WaitResult::ok;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  auto pause = std::chrono::microseconds(20);
  WaitResult result = WaitResult::timeout;
  while (true) {
    if (ready()) {
      result = WaitResult::ok;
      break;
    }
    if (comm.aborted.load()) {
      result = WaitResult::aborted;
      break;
    }
    if (comm.control && comm.header()->aborted_by.load() != 0) {
      result = WaitResult::peer_aborted;
      break;
    }
    if (std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(2000));
  }
  return result;
}

std::string wait_failure(CommState& comm, WaitResult result, double timeout_s) {
  switch (result) {
    case WaitResult::ok:
      return "";
    case WaitResult::aborted:
      return "the communicator was aborted (ncclCommAbort) on rank " + std::to_string(comm.rank);
    case WaitResult::peer_aborted:
      return "rank " + std::to_string(comm.header()->aborted_by.load() - 1) +
             " aborted the communicator";
    case WaitResult::timeout:
      return "timed out after " + std::to_string(timeout_s) + " s (SONATA_EMU_NCCL_TIMEOUT_S)";
  }
  return "";
}

namespace {
struct Registry {
  std::mutex mutex;
  std::vector<std::weak_ptr<CommState>> comms;
};
Registry& registry() {
  static auto* live = new Registry;
  return *live;
}
}  // namespace

void announce_device(int device, const std::string& holder) {
  Registry& live = registry();
  const std::lock_guard<std::mutex> lock(live.mutex);
  for (const auto& weak : live.comms)
    if (const std::shared_ptr<CommState> comm = weak.lock())
      if (comm->device == device && comm->control && !comm->destroyed.load())
        set_device_text(comm->slot(comm->rank), holder);
}

std::string peer_state(CommState& comm, int peer) {
  const std::string text = get_text(comm.slot(peer));
  const std::string device = get_device_text(comm.slot(peer));
  std::string state = "rank " + std::to_string(peer) + " was " + (text.empty() ? "idle" : text);
  if (!device.empty() && device.find(comm.name) == std::string::npos)
    state += " (its device was running " + device + ")";
  return state;
}

ncclResult_t join(const std::string& name, int nranks, int rank, int device,
                  std::shared_ptr<CommState>* out, std::string* error) {
  auto comm = std::make_shared<CommState>();
  comm->name = name;
  comm->nranks = nranks;
  comm->rank = rank;
  comm->device = device;
  comm->next_send.assign(size_t(nranks), 0);
  comm->next_recv.assign(size_t(nranks), 0);
  comm->control = Segment::create(name, control_bytes(nranks), false, error);
  if (!comm->control) return ncclSystemError;
  Header* header = comm->header();
  uint32_t expected = 0;
  if (!header->nranks.compare_exchange_strong(expected, uint32_t(nranks)) &&
      expected != uint32_t(nranks)) {
    *error = "rank " + std::to_string(rank) + " joins with " + std::to_string(nranks) +
             " ranks, but the communicator was created with " + std::to_string(expected);
    return ncclInvalidArgument;
  }
  uint32_t was = 0;
  if (!comm->slot(rank)->joined.compare_exchange_strong(was, 1)) {
    *error = "rank " + std::to_string(rank) + " joined this communicator twice";
    return ncclInvalidUsage;
  }
  header->attached.fetch_add(1);
  set_text(comm->slot(rank), "initialising (ncclCommInitRank)");
  const double timeout_s = timeout_seconds();
  const WaitResult joined = wait_until(
      *comm,
      [&] {
        for (int r = 0; r < nranks; ++r)
          if (!comm->slot(r)->joined.load()) return false;
        return true;
      },
      timeout_s);
  if (joined != WaitResult::ok) {
    std::string missing;
    for (int r = 0; r < nranks; ++r)
      if (!comm->slot(r)->joined.load())
        missing += (missing.empty() ? "" : ", ") + std::to_string(r);
    *error = "ncclCommInitRank on rank " + std::to_string(rank) + ": " +
             wait_failure(*comm, joined, timeout_s) + "; rank(s) " + missing + " never joined";
    leave(*comm, false);
    return ncclSystemError;
  }
  set_text(comm->slot(rank), "idle after ncclCommInitRank");
  {
    Registry& live = registry();
    const std::lock_guard<std::mutex> lock(live.mutex);
    std::erase_if(live.comms, [](const std::weak_ptr<CommState>& w) { return w.expired(); });
    live.comms.push_back(comm);
  }
  *out = std::move(comm);
  return ncclSuccess;
}

void leave(CommState& comm, bool abort) {
  if (!comm.control) return;
  // Abort first wakes this rank's waiting work (it fails at once); destroy flushes it, as
  // ncclCommDestroy finalises: freeing NCCL's buffers synchronises the device, so queued work
  // of the communicator runs before it is marked gone.
  if (abort) {
    comm.aborted.store(true);
    int32_t none = 0;
    comm.header()->aborted_by.compare_exchange_strong(none, comm.rank + 1);
  }
  if (comm.buffers) {
    // On the communicator's device, whatever is current (NCCL selects it itself).
    int current = 0;
    cudaGetDevice(&current);
    cudaSetDevice(comm.device);
    cudaFree(comm.buffers);
    cudaSetDevice(current);
    comm.buffers = nullptr;
  }
  comm.destroyed.store(true);
  set_text(comm.slot(comm.rank), abort ? "aborted (ncclCommAbort)" : "destroyed (ncclCommDestroy)");
  comm.slot(comm.rank)->detached.store(1);
  if (comm.header()->attached.fetch_sub(1) == 1) Segment::unlink(comm.name);
}

namespace {
// A 64-bit FNV-1a hash, for names derived from a parent's.
uint64_t fnv(const std::string& text, uint64_t seed) {
  uint64_t hash = 1469598103934665603ull ^ seed;
  for (const char c : text) {
    hash ^= uint8_t(c);
    hash *= 1099511628211ull;
  }
  return hash;
}
std::string hex(uint64_t value) {
  static const char digits[] = "0123456789abcdef";
  std::string text(16, '0');
  for (int i = 15; i >= 0; --i, value >>= 4) text[size_t(i)] = digits[value & 15];
  return text;
}
}  // namespace

ncclResult_t split_exchange(CommState& comm, int color, int key, std::vector<int>* members,
                            std::string* name) {
  uint64_t seq = 0;
  {
    const std::lock_guard<std::mutex> lock(comm.mutex);
    seq = ++comm.next_host_collective;
  }
  RankSlot* mine = comm.slot(comm.rank);
  mine->split_color = color;
  mine->split_key = key;
  mine->host_posted.store(seq);
  const double timeout_s = timeout_seconds();
  const WaitResult posted = wait_until(
      comm,
      [&] {
        for (int r = 0; r < comm.nranks; ++r)
          if (comm.slot(r)->host_posted.load() < seq) return false;
        return true;
      },
      timeout_s);
  if (posted != WaitResult::ok) {
    std::string missing;
    for (int r = 0; r < comm.nranks; ++r)
      if (comm.slot(r)->host_posted.load() < seq)
        missing += (missing.empty() ? "" : "; ") + peer_state(comm, r);
    comm.record_error(ncclSystemError, "ncclCommSplit #" + std::to_string(seq) + " on rank " +
                                           std::to_string(comm.rank) + ": " +
                                           wait_failure(comm, posted, timeout_s) + "; " + missing);
    return ncclSystemError;
  }
  std::vector<std::pair<std::pair<int, int>, int>> group;  // ((key, parent rank), parent rank)
  for (int r = 0; r < comm.nranks; ++r)
    if (comm.slot(r)->split_color == color) group.push_back({{comm.slot(r)->split_key, r}, r});
  std::sort(group.begin(), group.end());
  members->clear();
  for (const auto& entry : group) members->push_back(entry.second);
  mine->host_done.store(seq);
  const WaitResult done = wait_until(
      comm,
      [&] {
        for (int r = 0; r < comm.nranks; ++r)
          if (comm.slot(r)->host_done.load() < seq) return false;
        return true;
      },
      timeout_s);
  if (done != WaitResult::ok) {
    comm.record_error(ncclSystemError, "ncclCommSplit #" + std::to_string(seq) + " on rank " +
                                           std::to_string(comm.rank) + ": " +
                                           wait_failure(comm, done, timeout_s));
    return ncclSystemError;
  }
  const std::string derived = comm.name + ":" + std::to_string(seq) + ":" + std::to_string(color);
  *name = "/sonata_nccl_" + hex(fnv(derived, 1)) + hex(fnv(derived, 2));
  return ncclSuccess;
}

}  // namespace sonata::emu::nccl

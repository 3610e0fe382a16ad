// The emulated NCCL's API: communicators (init, split, destroy, abort, queries, errors),
// operations checked when issued and enqueued as work on their stream (one piece of work
// per operation, or per communicator for a group), and groups.
#include <nccl.h>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "emu/libs/internal.h"
#include "emu/libs/nccl_comm.h"

struct ncclComm {
  std::shared_ptr<sonata::emu::nccl::CommState> state;
  bool blocking = true;
  std::string last_error;  // what ncclGetLastError returned last, for this communicator
};

namespace {

using sonata::emu::nccl::CommState;
using sonata::emu::nccl::Op;
using sonata::emu::nccl::OpKind;

thread_local std::string thread_error;  // ncclGetLastError(nullptr): errors without a comm

ncclResult_t fail(ncclComm_t comm, ncclResult_t result, const std::string& message) {
  sonata::emu::library_log("NCCL", message);
  if (comm && comm->state) {
    const std::lock_guard<std::mutex> lock(comm->state->mutex);
    comm->state->error_text = message;
  } else {
    thread_error = message;
  }
  return result;
}

std::string id_name(const ncclUniqueId& id) {
  static const char digits[] = "0123456789abcdef";
  std::string name = "/sonata_nccl_";
  for (int i = 0; i < 16; ++i) {
    const auto byte = uint8_t(id.internal[i]);
    name += digits[byte >> 4];
    name += digits[byte & 15];
  }
  return name;
}

// Operations issued between ncclGroupStart and ncclGroupEnd on this thread, per
// communicator in issue order.
struct PendingGroup {
  int depth = 0;
  std::vector<std::pair<ncclComm_t, std::vector<Op>>> comms;
  std::vector<cudaStream_t> streams;
};
thread_local PendingGroup group;

ncclResult_t enqueue_ops(ncclComm_t comm, cudaStream_t stream, std::vector<Op> ops) {
  sonata::emu::Work work;
  work.name = ops.size() == 1 ? sonata::emu::nccl::op_name(ops.front().kind)
                              : "NCCL group of " + std::to_string(ops.size()) + " operations";
  work.kind = sonata::emu::WorkKind::library;
  work.cost = {.math = "memory", .library = "nccl"};  // bytes: the ranges below
  const int nranks = comm->state->nranks;
  for (const Op& op : ops) {
    const size_t eb = sonata::emu::nccl::dtype_bytes(op.dtype);
    const size_t n = op.count * eb;
    switch (op.kind) {
      case OpKind::all_reduce:
        work.reads.push_back({op.send, n});
        work.writes.push_back({op.recv, n});
        break;
      case OpKind::broadcast:
        if (comm->state->rank == op.root) work.reads.push_back({op.send, n});
        work.writes.push_back({op.recv, n});
        break;
      case OpKind::reduce:
        work.reads.push_back({op.send, n});
        if (comm->state->rank == op.root) work.writes.push_back({op.recv, n});
        break;
      case OpKind::reduce_scatter:
        work.reads.push_back({op.send, n * size_t(nranks)});
        work.writes.push_back({op.recv, n});
        break;
      case OpKind::all_gather:
        work.reads.push_back({op.send, n});
        work.writes.push_back({op.recv, n * size_t(nranks)});
        break;
      case OpKind::send:
        work.reads.push_back({op.send, n});
        break;
      case OpKind::recv:
        work.writes.push_back({op.recv, n});
        break;
      case OpKind::none:
        break;
    }
  }
  auto in_flight = std::make_shared<sonata::emu::nccl::OpsInFlight>(comm->state, std::move(ops));
  work.ready = [in_flight] { return in_flight->poll(); };
  work.run = [in_flight] { in_flight->run(); };
  const cudaError_t queued = sonata::emu::enqueue(stream, std::move(work));
  if (queued != cudaSuccess)
    return fail(comm, ncclUnhandledCudaError,
                "could not enqueue on the stream (CUDA error " + std::to_string(int(queued)) + ")");
  return ncclSuccess;
}

// NCCL allocates its channels' buffers with cudaMalloc when a communicator first
// communicates: memory a caching pool keeps is not available to it then.
// SONATA_EMU_NCCL_BUFFER_BYTES per peer (default 4 MiB, at most 8 peers' worth).
ncclResult_t connect(ncclComm_t comm) {
  CommState& state = *comm->state;
  if (state.buffers || state.nranks == 1) return ncclSuccess;
  const double per_peer = sonata::emu::env_positive("SONATA_EMU_NCCL_BUFFER_BYTES", 4 << 20);
  const size_t bytes = size_t(per_peer) * size_t(std::min(state.nranks - 1, 8));
  int current = 0;
  cudaGetDevice(&current);
  cudaSetDevice(state.device);
  const cudaError_t allocated = cudaMalloc(&state.buffers, bytes);
  cudaSetDevice(current);
  if (allocated != cudaSuccess) {
    state.buffers = nullptr;
    cudaGetLastError();  // NCCL reports it as its own error
    return fail(comm, ncclUnhandledCudaError,
                "rank " + std::to_string(state.rank) + " could not allocate NCCL's " +
                    std::to_string(bytes) + "-byte buffers on device " +
                    std::to_string(state.device) +
                    " (cudaMalloc: " + cudaGetErrorString(allocated) + ")");
  }
  return ncclSuccess;
}

// Checks an operation and gives it its number; enqueues it, or keeps it for ncclGroupEnd.
ncclResult_t issue(ncclComm_t comm, Op op, cudaStream_t stream) {
  const char* call = sonata::emu::nccl::op_name(op.kind);
  if (!comm || !comm->state)
    return fail(nullptr, ncclInvalidArgument, std::string(call) + ": null communicator");
  CommState& state = *comm->state;
  if (state.destroyed.load())
    return fail(comm, ncclInvalidUsage,
                std::string(call) + ": the communicator was " +
                    (state.aborted.load() ? "aborted" : "destroyed"));
  if (sonata::emu::nccl::dtype_bytes(op.dtype) == 0)
    return fail(comm, ncclInvalidArgument,
                std::string(call) + ": data type " + std::to_string(int(op.dtype)) +
                    " is not supported by the emulator");
  if (op.redop < ncclSum || op.redop > ncclAvg)
    return fail(comm, ncclInvalidArgument,
                std::string(call) + ": reduction " + std::to_string(int(op.redop)));
  const bool p2p = op.kind == OpKind::send || op.kind == OpKind::recv;
  if ((p2p || op.kind == OpKind::broadcast || op.kind == OpKind::reduce) &&
      (op.root < 0 || op.root >= state.nranks))
    return fail(comm, ncclInvalidArgument,
                std::string(call) + ": " + (p2p ? "peer " : "root ") + std::to_string(op.root) +
                    " is not a rank of this communicator of " + std::to_string(state.nranks));
  if (op.count > 0 && ((op.kind != OpKind::recv && !op.send &&
                        !(op.kind == OpKind::broadcast && op.root != state.rank)) ||
                       (op.kind != OpKind::send && !op.recv &&
                        !(op.kind == OpKind::reduce && op.root != state.rank))))
    return fail(comm, ncclInvalidArgument, std::string(call) + ": null buffer");
  const int stream_device = sonata::emu::stream_device_for(stream, call);
  if (stream_device != state.device)
    return fail(comm, ncclInvalidArgument,
                std::string(call) + " on rank " + std::to_string(state.rank) +
                    ": the stream belongs to device " + std::to_string(stream_device) +
                    " but the communicator's rank is on device " + std::to_string(state.device));
  {
    const std::lock_guard<std::mutex> lock(state.mutex);
    if (op.kind == OpKind::send)
      op.seq = ++state.next_send[size_t(op.root)];
    else if (op.kind == OpKind::recv)
      op.seq = ++state.next_recv[size_t(op.root)];
    else
      op.seq = ++state.next_collective;
  }
  if (const ncclResult_t connected = connect(comm); connected != ncclSuccess) return connected;
  if (group.depth == 0) return enqueue_ops(comm, stream, {op});
  for (size_t i = 0; i < group.comms.size(); ++i)
    if (group.comms[i].first == comm) {
      if (group.streams[i] != stream)
        return fail(
            comm, ncclInvalidUsage,
            std::string(call) + ": the emulator takes one stream per communicator within a group");
      group.comms[i].second.push_back(op);
      return ncclSuccess;
    }
  group.comms.push_back({comm, {op}});
  group.streams.push_back(stream);
  return ncclSuccess;
}

Op make_op(OpKind kind, const void* send, void* recv, size_t count, ncclDataType_t dtype,
           ncclRedOp_t redop, int root) {
  Op op;
  op.kind = kind;
  op.send = send;
  op.recv = recv;
  op.count = count;
  op.dtype = dtype;
  op.redop = redop;
  op.root = root;
  return op;
}

ncclResult_t init(ncclComm_t* out, int nranks, const std::string& name, int rank, bool blocking,
                  const char* call) {
  if (!out) return fail(nullptr, ncclInvalidArgument, std::string(call) + ": null comm pointer");
  *out = nullptr;
  if (nranks < 1 || rank < 0 || rank >= nranks)
    return fail(nullptr, ncclInvalidArgument,
                std::string(call) + ": rank " + std::to_string(rank) + " of " +
                    std::to_string(nranks) + " ranks");
  std::shared_ptr<CommState> state;
  std::string error;
  const int device = sonata::emu::device_for(call);
  if (device < 0)
    return fail(nullptr, ncclInvalidUsage, std::string(call) + ": no device for this thread");
  const ncclResult_t joined = sonata::emu::nccl::join(name, nranks, rank, device, &state, &error);
  if (joined != ncclSuccess) return fail(nullptr, joined, std::string(call) + ": " + error);
  *out = new ncclComm{std::move(state), blocking, {}};
  return ncclSuccess;
}

}  // namespace

ncclResult_t ncclGetVersion(int* version) {
  if (!version) return ncclInvalidArgument;
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  if (!id) return fail(nullptr, ncclInvalidArgument, "ncclGetUniqueId: null pointer");
  std::random_device random;
  std::memset(id->internal, 0, sizeof(id->internal));
  for (int i = 0; i < 16; i += 4) {
    const uint32_t word = random();
    std::memcpy(id->internal + i, &word, 4);
  }
  return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank) {
  return init(comm, nranks, id_name(id), rank, true, "ncclCommInitRank");
}

ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank,
                                    ncclConfig_t* config) {
  const bool blocking = !config || config->blocking != 0;
  return init(comm, nranks, id_name(id), rank, blocking, "ncclCommInitRankConfig");
}

ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
                           ncclConfig_t* config) {
  if (!comm || !comm->state || !newcomm)
    return fail(comm, ncclInvalidArgument, "ncclCommSplit: null communicator or result pointer");
  if (color < 0 && color != NCCL_SPLIT_NOCOLOR)
    return fail(
        comm, ncclInvalidArgument,
        "ncclCommSplit: color " + std::to_string(color) + " (non-negative or NCCL_SPLIT_NOCOLOR)");
  *newcomm = nullptr;
  std::vector<int> members;
  std::string name;
  const ncclResult_t exchanged =
      sonata::emu::nccl::split_exchange(*comm->state, color, key, &members, &name);
  if (exchanged != ncclSuccess)
    return fail(comm, exchanged, "ncclCommSplit: " + comm->state->last_error());
  if (color == NCCL_SPLIT_NOCOLOR) return ncclSuccess;
  int new_rank = 0;
  while (members[size_t(new_rank)] != comm->state->rank) ++new_rank;
  // The new communicator lives on the parent's device, whatever is current now.
  std::shared_ptr<CommState> state;
  std::string error;
  const ncclResult_t joined = sonata::emu::nccl::join(name, int(members.size()), new_rank,
                                                      comm->state->device, &state, &error);
  if (joined != ncclSuccess) return fail(comm, joined, "ncclCommSplit: " + error);
  *newcomm = new ncclComm{std::move(state), config ? config->blocking != 0 : comm->blocking, {}};
  return ncclSuccess;
}

ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  if (!comm) return fail(nullptr, ncclInvalidArgument, "ncclCommFinalize: null communicator");
  return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  if (!comm) return ncclSuccess;
  sonata::emu::nccl::leave(*comm->state, false);
  delete comm;
  return ncclSuccess;
}

ncclResult_t ncclCommAbort(ncclComm_t comm) {
  if (!comm) return ncclSuccess;
  // Wakes this rank's waiting work at once, and its peers' (they see the abort flag).
  sonata::emu::nccl::leave(*comm->state, true);
  delete comm;
  return ncclSuccess;
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* error) {
  if (!comm || !error)
    return fail(comm, ncclInvalidArgument, "ncclCommGetAsyncError: null argument");
  *error = ncclResult_t(comm->state->async_error.load());
  return ncclSuccess;
}

ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) {
  if (!comm || !count) return fail(comm, ncclInvalidArgument, "ncclCommCount: null argument");
  *count = comm->state->nranks;
  return ncclSuccess;
}

ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int* device) {
  if (!comm || !device) return fail(comm, ncclInvalidArgument, "ncclCommCuDevice: null argument");
  *device = comm->state->device;
  return ncclSuccess;
}

ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) {
  if (!comm || !rank) return fail(comm, ncclInvalidArgument, "ncclCommUserRank: null argument");
  *rank = comm->state->rank;
  return ncclSuccess;
}

const char* ncclGetErrorString(ncclResult_t result) {
  switch (result) {
    case ncclSuccess:
      return "no error";
    case ncclUnhandledCudaError:
      return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError:
      return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError:
      return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument:
      return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage:
      return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError:
      return "remote process exited or there was a network error";
    case ncclInProgress:
      return "NCCL operation in progress";
    default:
      return "unknown result code";
  }
}

const char* ncclGetLastError(ncclComm_t comm) {
  if (!comm || !comm->state) return thread_error.c_str();
  comm->last_error = comm->state->last_error();
  return comm->last_error.c_str();
}

ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                           cudaStream_t stream) {
  return issue(comm, make_op(OpKind::all_reduce, sendbuff, recvbuff, count, datatype, op, 0),
               stream);
}

ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, int root, ncclComm_t comm,
                           cudaStream_t stream) {
  return issue(comm, make_op(OpKind::broadcast, sendbuff, recvbuff, count, datatype, ncclSum, root),
               stream);
}

ncclResult_t ncclReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                        ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) {
  return issue(comm, make_op(OpKind::reduce, sendbuff, recvbuff, count, datatype, op, root),
               stream);
}

ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                               ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                               cudaStream_t stream) {
  return issue(comm,
               make_op(OpKind::reduce_scatter, sendbuff, recvbuff, recvcount, datatype, op, 0),
               stream);
}

ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                           ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  return issue(comm,
               make_op(OpKind::all_gather, sendbuff, recvbuff, sendcount, datatype, ncclSum, 0),
               stream);
}

ncclResult_t ncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, cudaStream_t stream) {
  return issue(comm, make_op(OpKind::send, sendbuff, nullptr, count, datatype, ncclSum, peer),
               stream);
}

ncclResult_t ncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, cudaStream_t stream) {
  return issue(comm, make_op(OpKind::recv, nullptr, recvbuff, count, datatype, ncclSum, peer),
               stream);
}

ncclResult_t ncclGroupStart(void) {
  ++group.depth;
  return ncclSuccess;
}

ncclResult_t ncclGroupEnd(void) {
  if (group.depth == 0)
    return fail(nullptr, ncclInvalidUsage, "ncclGroupEnd without ncclGroupStart");
  if (--group.depth > 0) return ncclSuccess;
  auto comms = std::move(group.comms);
  auto streams = std::move(group.streams);
  group.comms.clear();
  group.streams.clear();
  ncclResult_t result = ncclSuccess;
  for (size_t i = 0; i < comms.size(); ++i) {
    const ncclResult_t queued = enqueue_ops(comms[i].first, streams[i], std::move(comms[i].second));
    if (result == ncclSuccess) result = queued;
  }
  return result;
}

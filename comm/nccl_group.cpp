#include "comm/nccl_group.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "base/cuda_check.h"
#include "base/error.h"
#include "base/mpi_check.h"
#include "base/nccl_check.h"
#include "engine/device.h"

namespace sonata {
namespace {

// The live communicators, for the fatal handler.
std::mutex g_comms_mutex;
std::vector<ncclComm_t>& live_comms() {
  static auto* comms = new std::vector<ncclComm_t>();  // outlives every static destructor
  return *comms;
}
// Removes `comm` from the registry; false when the fatal handler already aborted it.
bool unregister(ncclComm_t comm) {
  std::lock_guard<std::mutex> lock(g_comms_mutex);
  auto& comms = live_comms();
  const auto at = std::find(comms.begin(), comms.end(), comm);
  if (at == comms.end()) return false;
  comms.erase(at);
  return true;
}

ncclDataType_t nccl_type(DType dtype) {
  switch (dtype) {
    case DType::f16:
      return ncclFloat16;
    case DType::bf16:
      return ncclBfloat16;
    case DType::f32:
      return ncclFloat32;
    case DType::f64:
      return ncclFloat64;
    case DType::i32:
      return ncclInt32;
    case DType::i64:
      return ncclInt64;
    case DType::u8:
    case DType::boolean:
      return ncclUint8;
  }
  SONATA_UNREACHABLE("unknown dtype");
}

ncclRedOp_t nccl_op(ReduceOp op) {
  return op == ReduceOp::sum ? ncclSum : ncclAvg;
}

// An error NCCL met in the background (a peer gone, a network failure) ends the job.
void check_async_error(ncclComm_t comm) {
  ncclResult_t async = ncclSuccess;
  NCCL_CHECK(ncclCommGetAsyncError(comm, &async));
  if (async != ncclSuccess)
    fail_library("NCCL", __FILE__, __LINE__, "ncclCommGetAsyncError", ncclGetErrorString(async));
}

// Blocks the host until `event` is done, watching the communicator: an asynchronous NCCL
// error, or no completion within the timeout, ends the job instead of hanging it.
void wait_with_timeout(ncclComm_t comm, const Event& event) {
  const auto start = std::chrono::steady_clock::now();
  const double timeout_s = nccl_timeout_seconds();
  while (!event.query()) {
    check_async_error(comm);
    const std::chrono::duration<double> waited = std::chrono::steady_clock::now() - start;
    if (waited.count() > timeout_s)
      fail_library("NCCL", __FILE__, __LINE__, "Work::synchronize",
                   str("not done after ", timeout_s, " s (SONATA_NCCL_TIMEOUT_S): a peer ",
                       "may have died or stopped issuing the same collectives"));
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

class NcclWork final : public Work {
 public:
  NcclWork(ncclComm_t comm, int device, std::vector<Tensor> tensors)
      : comm_(comm), device_(device), tensors_(std::move(tensors)) {}
  ~NcclWork() override {
    // Dropped unwaited: order the caller's stream after the transfer anyway, so the caching
    // allocator cannot hand the tensors' memory to new work while NCCL still uses it.
    if (!waited_ && !tensors_.empty()) cudaStreamWaitEvent(current_stream(device_), done_.get(), 0);
  }
  Event& done_event() { return done_; }

  void wait() override {
    done_.block(current_stream(device_));
    waited_ = true;
    tensors_.clear();
  }
  void synchronize() override {
    wait_with_timeout(comm_, done_);
    wait();
  }
  bool completed() override {
    if (done_.query()) return true;
    check_async_error(comm_);
    return false;
  }

 private:
  ncclComm_t comm_;
  int device_;
  std::vector<Tensor> tensors_;
  Event done_;
  bool waited_ = false;
};

// The device for this rank: one per local rank, or the only one a rank can see (launchers
// that give each rank its own CUDA_VISIBLE_DEVICES).
int pick_device(int local_rank) {
  const int count = cuda_device_count();
  SONATA_CHECK(count > 0, "NCCL process group: ", cuda_unavailable_reason());
  if (count == 1) return 0;
  SONATA_CHECK(local_rank < count, "NCCL process group: local rank ", local_rank,
               " has no GPU of its own (this node has ", count,
               "); start at most one process per GPU");
  return local_rank;
}

}  // namespace

double nccl_timeout_seconds() {
  if (const char* text = std::getenv("SONATA_NCCL_TIMEOUT_S")) {
    char* end = nullptr;
    const double seconds = std::strtod(text, &end);
    SONATA_CHECK(end != text && *end == '\0' && seconds > 0, "SONATA_NCCL_TIMEOUT_S='", text,
                 "' is not a positive number of seconds");
    return seconds;
  }
  return 600;
}

void abort_nccl_communicators() {
  std::unique_lock<std::mutex> lock(g_comms_mutex, std::try_to_lock);
  if (!lock.owns_lock()) return;  // another thread is aborting or registering
  for (ncclComm_t comm : live_comms()) ncclCommAbort(comm);
  live_comms().clear();
}

NcclGroup::NcclGroup(MPI_Comm world, int local_rank) : local_rank_(local_rank) {
  MPI_CHECK(MPI_Comm_rank(world, &rank_));
  MPI_CHECK(MPI_Comm_size(world, &world_size_));
  device_ = pick_device(local_rank);
  set_cuda_device(device_);  // before any NCCL call
  ncclUniqueId id{};
  if (rank_ == 0) NCCL_CHECK(ncclGetUniqueId(&id));
  MPI_CHECK(MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, world));
  NCCL_CHECK(ncclCommInitRank(&comm_, world_size_, id, rank_));
  adopt_communicator();
}

NcclGroup::NcclGroup(const NcclGroup& parent, int color, int key)
    : local_rank_(parent.local_rank_), device_(parent.device_) {
  SONATA_CHECK(color >= 0, "split: color ", color, " must not be negative");
  set_cuda_device(device_);
  NCCL_CHECK(ncclCommSplit(parent.comm_, color, key, &comm_, nullptr));
  NCCL_CHECK(ncclCommUserRank(comm_, &rank_));
  NCCL_CHECK(ncclCommCount(comm_, &world_size_));
  adopt_communicator();
}

void NcclGroup::adopt_communicator() {
  {
    std::lock_guard<std::mutex> lock(g_comms_mutex);
    live_comms().push_back(comm_);
  }
  stream_ = std::make_unique<Stream>(device_);
  barrier_word_ = zeros({1}, TensorOptions{}.with(DType::f32).with(device()));
}

std::shared_ptr<ProcessGroup> NcclGroup::split(int color, int key) {
  return std::make_shared<NcclGroup>(*this, color, key);
}

NcclGroup::~NcclGroup() {
  if (comm_ && unregister(comm_)) ncclCommDestroy(comm_);
}

void NcclGroup::follow_caller() {
  set_cuda_device(device_);
  Event ready;
  ready.record(current_stream(device_));
  ready.block(stream_->get());
}

std::shared_ptr<Work> NcclGroup::done(std::vector<Tensor> tensors) {
  auto work = std::make_shared<NcclWork>(comm_, device_, std::move(tensors));
  work->done_event().record(stream_->get());
  return work;
}

std::shared_ptr<Work> NcclGroup::all_reduce(Tensor& tensor, ReduceOp op) {
  check_comm_tensor(tensor, device(), "all_reduce", "input");
  check_reduce(tensor.dtype(), op, "all_reduce");
  follow_caller();
  NCCL_CHECK(ncclAllReduce(tensor.data_ptr(), tensor.data_ptr(), size_t(tensor.numel()),
                           nccl_type(tensor.dtype()), nccl_op(op), comm_, stream_->get()));
  return done({tensor});
}

std::shared_ptr<Work> NcclGroup::broadcast(Tensor& tensor, int root) {
  check_comm_tensor(tensor, device(), "broadcast", "input");
  check_rank(root, world_size_, "broadcast", "root");
  follow_caller();
  NCCL_CHECK(ncclBroadcast(tensor.data_ptr(), tensor.data_ptr(), size_t(tensor.numel()),
                           nccl_type(tensor.dtype()), root, comm_, stream_->get()));
  return done({tensor});
}

std::shared_ptr<Work> NcclGroup::all_gather(const Tensor& in, Tensor& out) {
  check_comm_tensor(in, device(), "all_gather", "in");
  check_comm_tensor(out, device(), "all_gather", "out");
  SONATA_CHECK(in.dtype() == out.dtype(), "all_gather: in is ", dtype_name(in.dtype()),
               " but out is ", dtype_name(out.dtype()));
  SONATA_CHECK(out.numel() == in.numel() * world_size_, "all_gather: out has ", out.numel(),
               " elements but a world of ", world_size_, " gathering ", in.numel(), " needs ",
               in.numel() * world_size_);
  follow_caller();
  NCCL_CHECK(ncclAllGather(in.data_ptr(), out.data_ptr(), size_t(in.numel()), nccl_type(in.dtype()),
                           comm_, stream_->get()));
  return done({in, out});
}

std::shared_ptr<Work> NcclGroup::reduce_scatter(const Tensor& in, Tensor& out, ReduceOp op) {
  check_comm_tensor(in, device(), "reduce_scatter", "in");
  check_comm_tensor(out, device(), "reduce_scatter", "out");
  check_reduce(in.dtype(), op, "reduce_scatter");
  SONATA_CHECK(in.dtype() == out.dtype(), "reduce_scatter: in is ", dtype_name(in.dtype()),
               " but out is ", dtype_name(out.dtype()));
  SONATA_CHECK(in.numel() == out.numel() * world_size_, "reduce_scatter: in has ", in.numel(),
               " elements but a world of ", world_size_, " scattering blocks of ", out.numel(),
               " needs ", out.numel() * world_size_);
  follow_caller();
  NCCL_CHECK(ncclReduceScatter(in.data_ptr(), out.data_ptr(), size_t(out.numel()),
                               nccl_type(in.dtype()), nccl_op(op), comm_, stream_->get()));
  return done({in, out});
}

std::shared_ptr<Work> NcclGroup::all_to_all(const Tensor& in, Tensor& out) {
  check_all_to_all(in, out, device(), world_size_);
  follow_caller();
  const size_t block = size_t(in.numel() / world_size_);
  const size_t block_bytes = block * size_t(dtype_size(in.dtype()));
  const auto* send_base = static_cast<const char*>(in.data_ptr());
  auto* recv_base = static_cast<char*>(out.data_ptr());
  // One group: NCCL posts every pair's send and receive together, so no rank waits on a peer
  // that is itself waiting (issued one by one they could deadlock).
  NCCL_CHECK(ncclGroupStart());
  for (int peer = 0; peer < world_size_; ++peer) {
    NCCL_CHECK(ncclSend(send_base + size_t(peer) * block_bytes, block, nccl_type(in.dtype()), peer,
                        comm_, stream_->get()));
    NCCL_CHECK(ncclRecv(recv_base + size_t(peer) * block_bytes, block, nccl_type(in.dtype()), peer,
                        comm_, stream_->get()));
  }
  NCCL_CHECK(ncclGroupEnd());
  return done({in, out});
}

std::shared_ptr<Work> NcclGroup::barrier() {
  // A one-word all-reduce: done on every rank only once every rank has reached it.
  follow_caller();
  NCCL_CHECK(ncclAllReduce(barrier_word_.data_ptr(), barrier_word_.data_ptr(), 1, ncclFloat32,
                           ncclSum, comm_, stream_->get()));
  return done({barrier_word_});
}

std::shared_ptr<Work> NcclGroup::send(const Tensor& tensor, int peer, int) {
  check_comm_tensor(tensor, device(), "send", "input");
  check_rank(peer, world_size_, "send", "peer");
  SONATA_CHECK(peer != rank_, "send: rank ", rank_, " cannot send to itself over NCCL");
  follow_caller();
  NCCL_CHECK(ncclSend(tensor.data_ptr(), size_t(tensor.numel()), nccl_type(tensor.dtype()), peer,
                      comm_, stream_->get()));
  return done({tensor});
}

std::shared_ptr<Work> NcclGroup::recv(Tensor& tensor, int peer, int) {
  check_comm_tensor(tensor, device(), "recv", "input");
  check_rank(peer, world_size_, "recv", "peer");
  SONATA_CHECK(peer != rank_, "recv: rank ", rank_, " cannot receive from itself over NCCL");
  follow_caller();
  NCCL_CHECK(ncclRecv(tensor.data_ptr(), size_t(tensor.numel()), nccl_type(tensor.dtype()), peer,
                      comm_, stream_->get()));
  return done({tensor});
}

}  // namespace sonata

#include "comm/nccl_group.h"

#include <algorithm>
#include <functional>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "base/cuda_check.h"
#include "base/cuda_status.h"
#include "base/error.h"
#include "base/nccl_check.h"
#include "base/no_throw.h"
#include "comm/bootstrap.h"
#include "comm/bounded_wait.h"
#include "engine/device.h"
#if SONATA_WITH_MPI
#include "base/mpi_check.h"
#include "comm/arrival_board.h"
#endif

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

// The asynchronous error NCCL met in the background (a peer gone, a network failure), as a
// sentence, or "" while there is none.
std::string async_error(ncclComm_t comm) {
  ncclResult_t async = ncclSuccess;
  const ncclResult_t status = ncclCommGetAsyncError(comm, &async);
  if (status != ncclSuccess) return str("ncclCommGetAsyncError: ", ncclGetErrorString(status));
  if (async == ncclSuccess || async == ncclInProgress) return "";
  return ncclGetErrorString(async);
}

// Whether the work before `event` is done (CUDA_QUERY: a not-ready answer is not left as the
// thread's last error for a later launch check to report).
bool event_done(const Event& event) {
  return CUDA_QUERY(cudaEventQuery(event.get()));
}

// Ends the job for an NCCL operation that failed or hung; abort_job aborts every
// communicator first, so no kernel keeps waiting on a peer that is gone.
[[noreturn]] void end_job(const std::string& failure) {
  abort_job(failure);
}

class NcclWork final : public Work {
 public:
  NcclWork(ncclComm_t comm, int device, std::vector<Tensor> tensors, std::string what,
           double timeout_s, std::function<std::string()> missing)
      : comm_(comm),
        device_(device),
        tensors_(std::move(tensors)),
        what_(std::move(what)),
        timeout_s_(timeout_s),
        missing_(std::move(missing)) {}
  ~NcclWork() override {
    // Dropped unwaited: order the caller's stream after the transfer anyway, so the caching
    // allocator cannot hand the tensors' memory to new work while NCCL still uses it.
    // current_stream() selects the device and may create the stream: it can throw, and an
    // exception leaving a destructor is std::terminate.
    if (!waited_ && !tensors_.empty())
      run_without_throwing("ordering the caller's stream after an unwaited NCCL operation", [&] {
        CUDA_RELEASE(cudaStreamWaitEvent(current_stream(device_), done_->get(), 0));
      });
  }
  const std::shared_ptr<Event>& done_event() const { return done_; }

  void wait() override {
    done_->block(current_stream(device_));
    waited_ = true;
    tensors_.clear();
  }
  // Blocks the host, polling the event and the communicator, never inside CUDA.
  void synchronize() override {
    std::string failure;
    const bool done = poll_until(
        [&] {
          if (event_done(*done_)) return true;
          failure = async_error(comm_);
          return !failure.empty();
        },
        timeout_s_);
    if (!failure.empty()) end_job(str(what_, " failed: ", failure));
    if (!done)
      end_job(
          str(what_, " did not complete within ", timeout_s_, " s (--comm-timeout); ", missing_()));
    wait();
  }
  bool completed() override {
    if (event_done(*done_)) return true;
    const std::string failure = async_error(comm_);
    if (!failure.empty()) end_job(str(what_, " failed: ", failure));
    return false;
  }

 private:
  ncclComm_t comm_;
  int device_;
  std::vector<Tensor> tensors_;
  std::string what_;
  double timeout_s_;
  std::function<std::string()> missing_;
  std::shared_ptr<Event> done_ = std::make_shared<Event>();
  bool waited_ = false;
};

#if SONATA_WITH_MPI
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
#endif

}  // namespace

void abort_nccl_communicators() {
  std::unique_lock<std::mutex> lock(g_comms_mutex, std::try_to_lock);
  if (!lock.owns_lock()) return;  // another thread is aborting or registering
  for (ncclComm_t comm : live_comms()) ncclCommAbort(comm);
  live_comms().clear();
}

#if SONATA_WITH_MPI
NcclGroup::NcclGroup(MPI_Comm world, int local_rank) : local_rank_(local_rank) {
  MPI_CHECK(MPI_Comm_rank(world, &rank_));
  MPI_CHECK(MPI_Comm_size(world, &world_size_));
  device_ = pick_device(local_rank);
  set_cuda_device(device_);  // before any NCCL call
  ncclUniqueId id{};
  if (rank_ == 0) NCCL_CHECK(ncclGetUniqueId(&id));
  MPI_CHECK(MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, world));
  NCCL_CHECK(ncclCommInitRank(&comm_, world_size_, id, rank_));
  MPI_CHECK(MPI_Comm_dup(world, &mpi_comm_));
  adopt_communicator();
}
#endif

NcclGroup::NcclGroup(int device) : device_(device) {
  const int count = cuda_device_count();
  SONATA_CHECK(count > 0, "NCCL process group: ", cuda_unavailable_reason());
  SONATA_CHECK(device >= 0 && device < count, "NCCL process group: cuda:", device,
               " does not exist (this machine has ", count, " GPU(s))");
  set_cuda_device(device_);  // before any NCCL call
  ncclUniqueId id{};
  NCCL_CHECK(ncclGetUniqueId(&id));
  NCCL_CHECK(ncclCommInitRank(&comm_, 1, id, 0));
  adopt_communicator();
}

NcclGroup::NcclGroup(const NcclGroup& parent, int color, int key)
    : local_rank_(parent.local_rank_), device_(parent.device_) {
  SONATA_CHECK(color >= 0, "split: color ", color, " must not be negative");
  set_timeout(parent.timeout());
  set_cuda_device(device_);
  NCCL_CHECK(ncclCommSplit(parent.comm_, color, key, &comm_, nullptr));
  NCCL_CHECK(ncclCommUserRank(comm_, &rank_));
  NCCL_CHECK(ncclCommCount(comm_, &world_size_));
#if SONATA_WITH_MPI
  // The same ranks in the same order (key, then rank), for the arrival board.
  if (parent.mpi_comm_ != MPI_COMM_NULL)
    MPI_CHECK(MPI_Comm_split(parent.mpi_comm_, color, key, &mpi_comm_));
#endif
  adopt_communicator();
}

void NcclGroup::adopt_communicator() {
  {
    std::lock_guard<std::mutex> lock(g_comms_mutex);
    live_comms().push_back(comm_);
  }
  // The highest priority: a bucket's all-reduce starts as soon as its gradients are ready
  // instead of queueing behind backward's kernels.
  int least = 0, greatest = 0;
  CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  stream_ = std::make_unique<Stream>(device_, greatest);
  // Its thread polls events of this device and drops them: it must run on this device.
  Watchdog::Options options;
  options.device = device();
  watchdog_ = std::make_unique<Watchdog>([](const std::string& failure) { end_job(failure); },
                                         std::move(options));
#if SONATA_WITH_MPI
  if (mpi_comm_ != MPI_COMM_NULL) {
    MPI_CHECK(MPI_Comm_set_errhandler(mpi_comm_, MPI_ERRORS_RETURN));
    board_ = std::make_shared<ArrivalBoard>(mpi_comm_);
    int level = MPI_THREAD_SINGLE;
    MPI_CHECK(MPI_Query_thread(&level));
    mpi_any_thread_ = level == MPI_THREAD_MULTIPLE;
  }
#endif
  barrier_word_ = zeros({1}, TensorOptions{}.with(DType::f32).with(device()));
}

std::shared_ptr<ProcessGroup> NcclGroup::split(int color, int key) {
  return std::make_shared<NcclGroup>(*this, color, key);
}

NcclGroup::~NcclGroup() {
  watchdog_.reset();  // it polls comm_ and reads the board
#if SONATA_WITH_MPI
  if (board_) board_->close(timeout());
  board_.reset();
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && mpi_comm_ != MPI_COMM_NULL) MPI_Comm_free(&mpi_comm_);
#endif
  if (comm_ && unregister(comm_)) ncclCommDestroy(comm_);
}

void NcclGroup::on_communication_stream(const std::function<void()>& body) {
  set_cuda_device(device_);
  const StreamGuard on_stream(*stream_);
  body();
}

void NcclGroup::follow_caller() {
  set_cuda_device(device_);
  Event ready;
  ready.record(current_stream(device_));
  ready.block(stream_->get());
}

std::shared_ptr<Work> NcclGroup::done(const char* what, std::vector<Tensor> tensors, int peer) {
  std::string label = str(what);
  if (!tensors.empty() && std::string(what) != "barrier")
    label +=
        str(" of ", tensors.front().numel(), " ", dtype_name(tensors.front().dtype()), " elements");
  label += str(" on an NCCL group of ", world_size_, " ranks");
  // Collectives count as arrivals (host side: this rank queued it); point-to-point names its
  // peer. The board is read over MPI, from the watchdog's thread only when MPI allows it.
  std::function<std::string()> missing;
  if (peer >= 0) {
    missing = [peer] { return str("its peer, rank ", peer, " of the group, did not match it"); };
  }
#if SONATA_WITH_MPI
  // A group made without MPI is this process alone: no rank can be missing.
  else if (board_) {
    const int64_t number = board_->arrive();
    missing = [board = std::weak_ptr<ArrivalBoard>(board_), number,
               grace = std::min(timeout(), 5.0), any_thread = mpi_any_thread_] {
      int is_main = 0;
      MPI_Is_thread_main(&is_main);
      const std::shared_ptr<ArrivalBoard> live = board.lock();
      if (!live || !(any_thread || is_main))
        return std::string(
            "rank(s) that did not arrive: unknown (read only from MPI's main "
            "thread without MPI_THREAD_MULTIPLE)");
      return live->describe_missing(number, grace);
    };
  }
#endif
  auto work =
      std::make_shared<NcclWork>(comm_, device_, std::move(tensors), label, timeout(), missing);
  work->done_event()->record(stream_->get());
  const std::shared_ptr<Event> event = work->done_event();
  const ncclComm_t comm = comm_;
  watchdog_->watch({[event] { return event_done(*event); }, [comm] { return async_error(comm); },
                    std::move(label), timeout(), std::move(missing)});
  return work;
}

std::shared_ptr<Work> NcclGroup::all_reduce(Tensor& tensor, ReduceOp op) {
  check_comm_tensor(tensor, device(), "all_reduce", "input");
  check_reduce(tensor.dtype(), op, "all_reduce");
  follow_caller();
  NCCL_CHECK(ncclAllReduce(tensor.data_ptr(), tensor.data_ptr(), size_t(tensor.numel()),
                           nccl_type(tensor.dtype()), nccl_op(op), comm_, stream_->get()));
  return done("all_reduce", {tensor});
}

std::shared_ptr<Work> NcclGroup::broadcast(Tensor& tensor, int root) {
  check_comm_tensor(tensor, device(), "broadcast", "input");
  check_rank(root, world_size_, "broadcast", "root");
  follow_caller();
  NCCL_CHECK(ncclBroadcast(tensor.data_ptr(), tensor.data_ptr(), size_t(tensor.numel()),
                           nccl_type(tensor.dtype()), root, comm_, stream_->get()));
  return done("broadcast", {tensor});
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
  return done("all_gather", {in, out});
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
  return done("reduce_scatter", {in, out});
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
  return done("all_to_all", {in, out});
}

std::shared_ptr<Work> NcclGroup::barrier() {
  // A one-word all-reduce: done on every rank only once every rank has reached it.
  follow_caller();
  NCCL_CHECK(ncclAllReduce(barrier_word_.data_ptr(), barrier_word_.data_ptr(), 1, ncclFloat32,
                           ncclSum, comm_, stream_->get()));
  return done("barrier", {barrier_word_});
}

std::shared_ptr<Work> NcclGroup::send(const Tensor& tensor, int peer, int) {
  check_comm_tensor(tensor, device(), "send", "input");
  check_rank(peer, world_size_, "send", "peer");
  SONATA_CHECK(peer != rank_, "send: rank ", rank_, " cannot send to itself over NCCL");
  follow_caller();
  NCCL_CHECK(ncclSend(tensor.data_ptr(), size_t(tensor.numel()), nccl_type(tensor.dtype()), peer,
                      comm_, stream_->get()));
  return done("send", {tensor}, peer);
}

std::shared_ptr<Work> NcclGroup::recv(Tensor& tensor, int peer, int) {
  check_comm_tensor(tensor, device(), "recv", "input");
  check_rank(peer, world_size_, "recv", "peer");
  SONATA_CHECK(peer != rank_, "recv: rank ", rank_, " cannot receive from itself over NCCL");
  follow_caller();
  NCCL_CHECK(ncclRecv(tensor.data_ptr(), size_t(tensor.numel()), nccl_type(tensor.dtype()), peer,
                      comm_, stream_->get()));
  return done("recv", {tensor}, peer);
}

}  // namespace sonata

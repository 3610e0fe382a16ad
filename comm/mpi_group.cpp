#include "comm/mpi_group.h"

#include <algorithm>
#include <climits>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "base/error.h"
#include "base/mpi_check.h"
#include "comm/arrival_board.h"
#include "comm/bootstrap.h"
#include "comm/bounded_wait.h"

namespace sonata {
// What a Work is, for the message that ends the job when it does not finish in time.
struct MpiWorkLabel {
  const char* what = "";  // the operation
  int64_t numel = 0;      // its tensor's elements (0: none)
  DType dtype = DType::f32;
  int peer = -1;        // send/recv: the peer's rank in the group
  int64_t arrival = 0;  // collectives: its number on the group's arrival board
  std::weak_ptr<ArrivalBoard> board;
  int world_size = 1;
  double timeout_s = 600;
};

namespace {

void abandon(std::vector<Tensor> tensors) {
  static std::mutex mutex;
  static auto* abandoned = new std::vector<Tensor>();  // never freed, on purpose
  std::lock_guard<std::mutex> lock(mutex);
  abandoned->insert(abandoned->end(), tensors.begin(), tensors.end());
}

std::string describe_timeout(const MpiWorkLabel& label) {
  std::string text = str(label.what);
  if (label.numel > 0) text += str(" of ", label.numel, " ", dtype_name(label.dtype), " elements");
  text += str(" on an MPI group of ", label.world_size, " ranks did not complete within ",
              label.timeout_s, " s (--comm-timeout); ");
  if (label.peer >= 0)
    return text + str("its peer, rank ", label.peer, " of the group, did not match it");
  if (const std::shared_ptr<ArrivalBoard> board = label.board.lock())
    return text + board->describe_missing(label.arrival, std::min(label.timeout_s, 5.0));
  return text + "rank(s) that did not arrive: unknown (the group is gone)";
}

// One non-blocking MPI call. `finish` runs once, after the request completes (averaging,
// copying a staged f32 result back); the tensors are held until then so that MPI never
// reads or writes freed memory. wait() polls MPI_Test (comm/bounded_wait.h) rather than
// blocking in MPI_Wait, so a peer that never arrives ends the job after the timeout.
class MpiWork final : public Work {
 public:
  MpiWork(MpiWorkLabel label, std::vector<Tensor> keep_alive, std::function<void()> finish = {})
      : label_(std::move(label)), keep_alive_(std::move(keep_alive)), finish_(std::move(finish)) {}
  ~MpiWork() override {
    // Dropped unwaited (an exception unwinding past it): waiting here could hang on a peer
    // that never posts its side, and freeing the memory would let MPI write into reused
    // blocks. The tensors are kept for the life of the process instead.
    if (!done_) abandon(std::move(keep_alive_));
  }
  MPI_Request* request() { return &request_; }

  void wait() override {
    if (done_) return;
    if (!poll_until([this] { return test(); }, label_.timeout_s))
      abort_job(describe_timeout(label_));
    finish();
  }
  bool completed() override {
    if (done_) return true;
    if (test()) finish();
    return done_;
  }

 private:
  bool test() {
    int flag = 0;
    MPI_CHECK(MPI_Test(&request_, &flag, MPI_STATUS_IGNORE));
    return flag != 0;
  }
  void finish() {
    done_ = true;
    if (finish_) finish_();
    finish_ = nullptr;
    keep_alive_.clear();
  }

  MpiWorkLabel label_;
  MPI_Request request_ = MPI_REQUEST_NULL;
  bool done_ = false;
  std::vector<Tensor> keep_alive_;
  std::function<void()> finish_;
};

// The MPI type that carries `dtype`. Halves travel as raw 16-bit words: only operations
// that move data may use that type; reductions stage them in f32 first.
MPI_Datatype mpi_type(DType dtype) {
  switch (dtype) {
    case DType::f32:
      return MPI_FLOAT;
    case DType::f64:
      return MPI_DOUBLE;
    case DType::i32:
      return MPI_INT32_T;
    case DType::i64:
      return MPI_INT64_T;
    case DType::f16:
    case DType::bf16:
      return MPI_UINT16_T;
    case DType::u8:
    case DType::boolean:
      return MPI_UINT8_T;
  }
  SONATA_UNREACHABLE("unknown dtype");
}

int mpi_count(const Tensor& tensor, const char* what) {
  SONATA_CHECK(tensor.numel() <= INT_MAX, what, ": ", tensor.numel(),
               " elements exceed one MPI call's count (", INT_MAX, "); split the tensor");
  return int(tensor.numel());
}

// Averaging: sum, then divide by the world size (a true division, not a reciprocal product,
// so that a world of 3 averages to the closest float).
void divide_in_place(Tensor& tensor, int world_size) {
  const int64_t n = tensor.numel();
  if (tensor.dtype() == DType::f64) {
    double* data = tensor.data<double>();
    for (int64_t i = 0; i < n; ++i) data[i] /= world_size;
  } else {
    SONATA_CHECK(tensor.dtype() == DType::f32, "avg: unexpected dtype ",
                 dtype_name(tensor.dtype()));
    float* data = tensor.data<float>();
    const float divisor = float(world_size);
    for (int64_t i = 0; i < n; ++i) data[i] /= divisor;
  }
}

// The tensor MPI reduces: the tensor itself, or an f32 copy of a half tensor.
Tensor reduction_buffer(const Tensor& tensor) {
  return is_half(tensor.dtype()) ? tensor.detach().to(DType::f32) : tensor;
}

// After a reduction into `reduced`: average if asked, then write a staged result back.
std::function<void()> finish_reduction(Tensor reduced, Tensor target, ReduceOp op, int world_size) {
  if (op == ReduceOp::sum && reduced.same(target)) return {};
  return [reduced, target, op, world_size]() mutable {
    if (op == ReduceOp::avg) divide_in_place(reduced, world_size);
    if (!reduced.same(target)) target.detach().copy_(reduced);
  };
}

}  // namespace

MpiGroup::MpiGroup(MPI_Comm parent, int local_rank) : local_rank_(local_rank) {
  MPI_CHECK(MPI_Comm_dup(parent, &comm_));
  MPI_CHECK(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
  MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
  MPI_CHECK(MPI_Comm_size(comm_, &world_size_));
  int level = MPI_THREAD_SINGLE;
  MPI_CHECK(MPI_Query_thread(&level));
  any_thread_ = level == MPI_THREAD_MULTIPLE;
  board_ = std::make_shared<ArrivalBoard>(comm_);
}

MpiGroup::~MpiGroup() {
  board_->close(timeout());  // its window lives on comm_
  board_.reset();
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

void MpiGroup::check_thread(const char* what) const {
  if (any_thread_) return;
  int is_main = 0;
  MPI_CHECK(MPI_Is_thread_main(&is_main));
  SONATA_CHECK(is_main, what, ": MPI was initialised without MPI_THREAD_MULTIPLE, so only the ",
               "thread that initialised it may communicate");
}

MpiWorkLabel MpiGroup::label(const char* what, const Tensor* tensor, int peer) const {
  MpiWorkLabel label;
  label.what = what;
  if (tensor) {
    label.numel = tensor->numel();
    label.dtype = tensor->dtype();
  }
  label.world_size = world_size_;
  label.timeout_s = timeout();
  label.peer = peer;
  if (peer < 0) {  // a collective: every rank counts it
    label.arrival = board_->arrive();
    label.board = board_;
  }
  return label;
}

std::shared_ptr<Work> MpiGroup::all_reduce(Tensor& tensor, ReduceOp op) {
  check_thread("all_reduce");
  check_comm_tensor(tensor, device(), "all_reduce", "input");
  check_reduce(tensor.dtype(), op, "all_reduce");
  Tensor reduced = reduction_buffer(tensor);
  auto work =
      std::make_shared<MpiWork>(label("all_reduce", &tensor), std::vector<Tensor>{tensor, reduced},
                                finish_reduction(reduced, tensor, op, world_size_));
  MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, reduced.data_ptr(), mpi_count(reduced, "all_reduce"),
                           mpi_type(reduced.dtype()), MPI_SUM, comm_, work->request()));
  return work;
}

std::shared_ptr<Work> MpiGroup::broadcast(Tensor& tensor, int root) {
  check_thread("broadcast");
  check_comm_tensor(tensor, device(), "broadcast", "input");
  check_rank(root, world_size_, "broadcast", "root");
  auto work = std::make_shared<MpiWork>(label("broadcast", &tensor), std::vector<Tensor>{tensor});
  MPI_CHECK(MPI_Ibcast(tensor.data_ptr(), mpi_count(tensor, "broadcast"), mpi_type(tensor.dtype()),
                       root, comm_, work->request()));
  return work;
}

std::shared_ptr<Work> MpiGroup::all_gather(const Tensor& in, Tensor& out) {
  check_thread("all_gather");
  check_comm_tensor(in, device(), "all_gather", "in");
  check_comm_tensor(out, device(), "all_gather", "out");
  SONATA_CHECK(in.dtype() == out.dtype(), "all_gather: in is ", dtype_name(in.dtype()),
               " but out is ", dtype_name(out.dtype()));
  SONATA_CHECK(out.numel() == in.numel() * world_size_, "all_gather: out has ", out.numel(),
               " elements but a world of ", world_size_, " gathering ", in.numel(), " needs ",
               in.numel() * world_size_);
  const int count = mpi_count(in, "all_gather");
  mpi_count(out, "all_gather");
  const MPI_Datatype type = mpi_type(in.dtype());
  // `in` already in its place inside `out` is MPI's in-place case.
  const char* own_block =
      static_cast<const char*>(out.data_ptr()) + in.numel() * rank_ * dtype_size(in.dtype());
  const void* send = in.data_ptr() == own_block ? MPI_IN_PLACE : in.data_ptr();
  auto work = std::make_shared<MpiWork>(label("all_gather", &in), std::vector<Tensor>{in, out});
  MPI_CHECK(MPI_Iallgather(send, count, type, out.data_ptr(), count, type, comm_, work->request()));
  return work;
}

std::shared_ptr<Work> MpiGroup::reduce_scatter(const Tensor& in, Tensor& out, ReduceOp op) {
  check_thread("reduce_scatter");
  check_comm_tensor(in, device(), "reduce_scatter", "in");
  check_comm_tensor(out, device(), "reduce_scatter", "out");
  check_reduce(in.dtype(), op, "reduce_scatter");
  SONATA_CHECK(in.dtype() == out.dtype(), "reduce_scatter: in is ", dtype_name(in.dtype()),
               " but out is ", dtype_name(out.dtype()));
  SONATA_CHECK(in.numel() == out.numel() * world_size_, "reduce_scatter: in has ", in.numel(),
               " elements but a world of ", world_size_, " scattering blocks of ", out.numel(),
               " needs ", out.numel() * world_size_);
  mpi_count(in, "reduce_scatter");
  const Tensor source = reduction_buffer(in);
  Tensor reduced = is_half(out.dtype()) ? empty(out.shape(), out.options().with(DType::f32)) : out;
  auto work = std::make_shared<MpiWork>(label("reduce_scatter", &in),
                                        std::vector<Tensor>{in, out, source, reduced},
                                        finish_reduction(reduced, out, op, world_size_));
  MPI_CHECK(MPI_Ireduce_scatter_block(source.data_ptr(), reduced.data_ptr(),
                                      mpi_count(reduced, "reduce_scatter"),
                                      mpi_type(reduced.dtype()), MPI_SUM, comm_, work->request()));
  return work;
}

std::shared_ptr<Work> MpiGroup::all_to_all(const Tensor& in, Tensor& out) {
  check_thread("all_to_all");
  check_all_to_all(in, out, device(), world_size_);
  mpi_count(in, "all_to_all");
  const int block = int(in.numel() / world_size_);
  const MPI_Datatype type = mpi_type(in.dtype());
  auto work = std::make_shared<MpiWork>(label("all_to_all", &in), std::vector<Tensor>{in, out});
  MPI_CHECK(MPI_Ialltoall(in.data_ptr(), block, type, out.data_ptr(), block, type, comm_,
                          work->request()));
  return work;
}

std::shared_ptr<Work> MpiGroup::barrier() {
  check_thread("barrier");
  auto work = std::make_shared<MpiWork>(label("barrier"), std::vector<Tensor>{});
  MPI_CHECK(MPI_Ibarrier(comm_, work->request()));
  return work;
}

std::shared_ptr<Work> MpiGroup::send(const Tensor& tensor, int peer, int tag) {
  check_thread("send");
  check_comm_tensor(tensor, device(), "send", "input");
  check_rank(peer, world_size_, "send", "peer");
  SONATA_CHECK(tag >= 0, "send: tag ", tag, " must not be negative");
  auto work = std::make_shared<MpiWork>(label("send", &tensor, peer), std::vector<Tensor>{tensor});
  MPI_CHECK(MPI_Isend(tensor.data_ptr(), mpi_count(tensor, "send"), mpi_type(tensor.dtype()), peer,
                      tag, comm_, work->request()));
  return work;
}

std::shared_ptr<ProcessGroup> MpiGroup::split(int color, int key) {
  check_thread("split");
  SONATA_CHECK(color >= 0, "split: color ", color, " must not be negative");
  MPI_Comm part = MPI_COMM_NULL;
  MPI_CHECK(MPI_Comm_split(comm_, color, key, &part));
  auto group = std::make_shared<MpiGroup>(part, local_rank_);  // duplicates `part`
  group->set_timeout(timeout());
  MPI_CHECK(MPI_Comm_free(&part));
  return group;
}

std::shared_ptr<Work> MpiGroup::recv(Tensor& tensor, int peer, int tag) {
  check_thread("recv");
  check_comm_tensor(tensor, device(), "recv", "input");
  check_rank(peer, world_size_, "recv", "peer");
  SONATA_CHECK(tag >= 0, "recv: tag ", tag, " must not be negative");
  auto work = std::make_shared<MpiWork>(label("recv", &tensor, peer), std::vector<Tensor>{tensor});
  MPI_CHECK(MPI_Irecv(tensor.data_ptr(), mpi_count(tensor, "recv"), mpi_type(tensor.dtype()), peer,
                      tag, comm_, work->request()));
  return work;
}

}  // namespace sonata

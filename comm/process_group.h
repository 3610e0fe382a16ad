#pragma once
// A process group: the ranks of one data-parallel job and the collectives between them.
// Every operation is asynchronous and returns a Work to wait on; tensors are contiguous and
// updated in place (all_gather and reduce_scatter write their `out`).
//
// Backends (comm/bootstrap.h picks one):
//   single - world size 1: every operation completes at once, MPI is never initialised.
//   mpi    - CPU tensors, non-blocking MPI (MPI_Iallreduce, ...), so communication overlaps
//            computation on the CPU too. f32, f64, i32 and i64 reduce natively; f16 and bf16
//            reduce through an f32 buffer (MPI has no half type), summed in f32 and rounded
//            once at the end. Operations that only move data (broadcast, all_gather,
//            send/recv) take every dtype.
//   nccl   - CUDA tensors, on the group's own communication stream, ordered against the
//            caller's current stream by events: no host synchronisation anywhere.
//
// Every rank must issue the same collectives in the same order. Keep a tensor (and its Work)
// alive until wait() has returned: the transfer reads and writes its memory until then.
#include <functional>
#include <memory>
#include <string>

#include "comm/bounded_wait.h"
#include "engine/tensor.h"

namespace sonata {

enum class ReduceOp {
  sum,
  avg,  // sum, then divided by the world size; floating-point dtypes only
};

// One operation in flight.
class Work {
 public:
  virtual ~Work() = default;
  // Makes the result usable by the caller. MPI and single: returns once the operation is
  // done (and the result averaged). NCCL: makes the caller's current stream wait for it and
  // returns at once; kernels launched afterwards see the result.
  virtual void wait() = 0;
  // Blocks the host until the operation is done. Every backend polls (comm/bounded_wait.h)
  // and, past the group's timeout(), ends the job naming the operation and the ranks that
  // did not arrive, so a dead or stopped peer never leaves this rank hanging.
  virtual void synchronize() { wait(); }
  // Whether the operation has finished, without blocking. MPI: a finished all-reduce with
  // avg is divided here or in wait(), whichever comes first.
  virtual bool completed() = 0;
};

class ProcessGroup {
 public:
  virtual ~ProcessGroup() = default;
  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  virtual int local_rank() const = 0;       // rank among the processes on this node
  virtual std::string backend() const = 0;  // "single", "mpi" or "nccl"
  virtual Device device() const = 0;        // where this group's tensors must live
  // Whether wait() only orders the caller's stream (NCCL): work issued after it runs after
  // the result on the device, so a chain of operations can be issued without host waits.
  virtual bool stream_ordered() const { return false; }
  // Runs `body` with this group's communication stream as the calling thread's current
  // stream (NCCL), so the kernels it launches, and the streams its Work::wait() calls order,
  // are the communication stream's: work between two phases of one reduction stays off the
  // caller's stream, which waits only for the end. Other groups just run `body`.
  virtual void on_communication_stream(const std::function<void()>& body) { body(); }

  // Seconds any wait on this group's operations may block before the job ends (the
  // trainer's --comm-timeout); applies to operations started afterwards. split() copies it.
  void set_timeout(double seconds);
  double timeout() const { return timeout_s_; }

  virtual std::shared_ptr<Work> all_reduce(Tensor& tensor, ReduceOp op = ReduceOp::sum) = 0;
  virtual std::shared_ptr<Work> broadcast(Tensor& tensor, int root) = 0;
  // out holds world_size() * in.numel() elements: rank r's `in` lands at r * in.numel().
  virtual std::shared_ptr<Work> all_gather(const Tensor& in, Tensor& out) = 0;
  // in holds world_size() * out.numel() elements; rank r gets the reduction of block r.
  virtual std::shared_ptr<Work> reduce_scatter(const Tensor& in, Tensor& out,
                                               ReduceOp op = ReduceOp::sum) = 0;
  // in and out hold the same number of elements, world_size() blocks of equal size: block p
  // of `in` goes to rank p, block p of `out` comes from rank p (torch's all_to_all_single).
  virtual std::shared_ptr<Work> all_to_all(const Tensor& in, Tensor& out) = 0;
  virtual std::shared_ptr<Work> barrier() = 0;
  // Point to point. NCCL has no tags: its messages match in the order they are posted.
  virtual std::shared_ptr<Work> send(const Tensor& tensor, int peer, int tag = 0) = 0;
  virtual std::shared_ptr<Work> recv(Tensor& tensor, int peer, int tag = 0) = 0;

  // A collective that makes a new group of the ranks passing the same `color` (>= 0), ranked
  // by `key` then by rank (MPI_Comm_split, ncclCommSplit). With one color for all it is a
  // duplicate: the same ranks, but collectives on it are ordered independently of this one.
  virtual std::shared_ptr<ProcessGroup> split(int color, int key) = 0;

 private:
  double timeout_s_ = default_comm_timeout_seconds();
};

// A Work that is already done (the single group, empty tensors).
std::shared_ptr<Work> completed_work();

// Argument checks shared by the backends; each throws one sentence naming `what` (the
// operation) and the offending input.
void check_comm_tensor(const Tensor& tensor, Device device, const char* what, const char* name);
void check_reduce(DType dtype, ReduceOp op, const char* what);
void check_rank(int rank, int world_size, const char* what, const char* name);
const char* reduce_op_name(ReduceOp op);
// all_to_all's: both on `device`, one dtype, equal sizes divisible by the world size.
void check_all_to_all(const Tensor& in, const Tensor& out, Device device, int world_size);

}  // namespace sonata

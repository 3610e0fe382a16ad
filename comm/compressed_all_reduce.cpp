#include "comm/compressed_all_reduce.h"

#include <utility>
#include <vector>

#include "base/error.h"
#include "base/nvtx.h"
#include "engine/autograd/grad_mode.h"
#include "engine/ops.h"

namespace sonata {
namespace {

class CompressedAllReduce final : public Work {
 public:
  CompressedAllReduce(ProcessGroup& exchange, ProcessGroup& gather, Tensor tensor, DType wire,
                      ReduceOp op)
      : exchange_(exchange),
        gather_(exchange.stream_ordered() ? exchange : gather),
        tensor_(std::move(tensor)),
        wire_(wire),
        op_(op) {
    NoGradGuard no_grad;
    const int64_t world = exchange_.world_size();
    numel_ = tensor_.numel();
    block_ = (numel_ + world - 1) / world;
    const TensorOptions wire_options = tensor_.options().with(wire_);
    // Padding past numel_ stays zero, so every block has the same size.
    Tensor outgoing = zeros({block_ * world}, wire_options);
    outgoing.slice(0, 0, numel_).copy_(tensor_.view({numel_}));
    incoming_ = empty({block_ * world}, wire_options);
    // Made here, on the caller's stream, which reads it at the end: its memory is freed on
    // that stream after the read.
    gathered_ = empty({block_ * world}, wire_options);
    outgoing_ = outgoing;
    work_ = exchange_.all_to_all(outgoing_, incoming_);
    // Stream-ordered (NCCL): the sum and the all-gather queue behind the exchange at once,
    // so both phases sit on one communicator in launch order on every rank, never in an
    // order set by when each rank's host happened to poll. The sum runs on the
    // communication stream (advance): the caller's stream, which is running backward,
    // waits only in wait(), for the all-gather.
    if (exchange_.stream_ordered()) advance();
  }

  void wait() override { run_to_end(false); }
  void synchronize() override { run_to_end(true); }
  bool completed() override {
    while (phase_ != Phase::done && work_->completed()) advance();
    return phase_ == Phase::done;
  }

 private:
  enum class Phase { exchange, gather, done };

  void run_to_end(bool block_host) {
    while (phase_ != Phase::done) {
      if (block_host) work_->synchronize();
      advance();  // which waits for the phase (NCCL: orders a stream after it)
    }
  }

  // The current phase's transfer has finished (MPI), or is queued (NCCL): start the next.
  void advance() {
    SONATA_NVTX_RANGE("sonata::all_reduce_compressed::advance");
    NoGradGuard no_grad;
    if (phase_ == Phase::exchange) {
      // On the communication stream (NCCL; elsewhere as it is): its wait orders that stream
      // after the exchange, and the sum's kernels queue there.
      exchange_.on_communication_stream([this] {
        work_->wait();
        const DType accumulate = tensor_.dtype() == DType::f64 ? DType::f64 : DType::f32;
        const int64_t world = exchange_.world_size();
        Tensor total = sum(incoming_.view({world, block_}).to(accumulate), {0});
        if (op_ == ReduceOp::avg) total = div(total, full({1}, double(world), total.options()));
        // The exchange's buffers belong to the caller's stream, which has not waited for the
        // sum: kept until it waits for the end.
        kept_ = {outgoing_, incoming_};
        outgoing_ = total.to(wire_);  // on the communication stream, freed there
        incoming_ = Tensor();
        work_ = gather_.all_gather(outgoing_, gathered_);
      });
      phase_ = Phase::gather;
    } else {
      work_->wait();  // NCCL: orders the caller's stream after the all-gather; MPI: done
      tensor_.view({numel_}).copy_(gathered_.slice(0, 0, numel_));
      outgoing_ = gathered_ = Tensor();
      kept_.clear();
      work_.reset();
      phase_ = Phase::done;
    }
  }

  ProcessGroup& exchange_;
  ProcessGroup& gather_;
  Tensor tensor_;
  DType wire_;
  ReduceOp op_;
  int64_t numel_ = 0;
  int64_t block_ = 0;
  Tensor outgoing_, incoming_, gathered_;  // held until their transfer is done
  std::vector<Tensor> kept_;               // the exchange's buffers, until the end
  std::shared_ptr<Work> work_;
  Phase phase_ = Phase::exchange;
};

}  // namespace

std::shared_ptr<Work> all_reduce_compressed(ProcessGroup& exchange, ProcessGroup& gather,
                                            Tensor& tensor, DType wire, ReduceOp op) {
  check_comm_tensor(tensor, exchange.device(), "all_reduce_compressed", "input");
  SONATA_CHECK(gather.world_size() == exchange.world_size() && gather.rank() == exchange.rank(),
               "all_reduce_compressed: the gather group (rank ", gather.rank(), " of ",
               gather.world_size(), ") is not a duplicate of the exchange group (rank ",
               exchange.rank(), " of ", exchange.world_size(), ")");
  check_reduce(tensor.dtype(), op, "all_reduce_compressed");
  SONATA_CHECK(is_half(wire), "all_reduce_compressed: the wire dtype must be f16 or bf16, got ",
               dtype_name(wire));
  SONATA_CHECK(is_floating(tensor.dtype()) && !is_half(tensor.dtype()),
               "all_reduce_compressed: the tensor must be f32 or f64 (a ",
               dtype_name(tensor.dtype()), " tensor is reduced as it is)");
  if (tensor.numel() == 0) return completed_work();
  return std::make_shared<CompressedAllReduce>(exchange, gather, tensor, wire, op);
}

}  // namespace sonata

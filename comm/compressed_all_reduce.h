#pragma once
// An all-reduce whose traffic is 16-bit while its sum is accumulated in f32 (the [ddp]
// option "all-reduce in fp16/bf16 with fp32 accumulation"; PyTorch's fp16_compress_hook sends
// fp16 too, but NCCL then also adds in fp16 at every hop of the ring).
//
// Each rank rounds its tensor to `wire` once and splits it into world-size blocks; an
// all-to-all gives rank p block p of every rank; rank p adds them in f32 (f64 for an f64
// tensor), divides for avg, rounds the result to `wire` once; an all-gather brings every
// block to every rank, and the result is widened back into the tensor. Each rank sends
// 2(R-1)/R of the tensor in 16-bit words: half the bytes of a f32 ring all-reduce. Every rank
// ends with the same bits. Values beyond the wire type's range become inf (fp16: 65504), which
// a loss scaler then sees as an overflow and skips the step, as with fp16 gradients.
//
// On a stream-ordered group (NCCL) both phases are issued at once, on `exchange` alone:
// one communicator and stream, in call order on every rank; `gather` is not used. Otherwise
// (MPI) the host must see the exchange finish first, so the phases advance in wait(),
// synchronize() and completed(); a caller that polls completed() (the reducer does, from its
// hooks) lets the all-gather start while backward still runs. Whether a phase has finished
// then differs between ranks, so the all-gathers run on `gather`, a duplicate of `exchange`
// (exchange.split(0, exchange.rank())): each group sees its collectives in the same order on
// every rank (bucket order) however the two phases interleave. With one reduction in flight
// at a time, both may be the same group. The groups must outlive the returned Work.
#include <memory>

#include "comm/process_group.h"

namespace sonata {

std::shared_ptr<Work> all_reduce_compressed(ProcessGroup& exchange, ProcessGroup& gather,
                                            Tensor& tensor, DType wire,
                                            ReduceOp op = ReduceOp::sum);

}  // namespace sonata

#include "train/strategy/data_parallel_strategy.h"

#include <optional>

#include "base/error.h"
#include "base/nvtx.h"
#include "comm/sync_batch_norm.h"
#include "models/layers/batch_norm.h"

namespace sonata {

DataParallelStrategy::DataParallelStrategy(const TrainerOptions& options, Task& task,
                                           std::shared_ptr<ProcessGroup> world)
    : TrainingStrategy(std::move(world)), options_(options), task_(task) {
  SONATA_CHECK(world_ && world_->world_size() > 1,
               "data parallel training needs more than one process");
}

void DataParallelStrategy::start() {
  DdpOptions ddp_options;
  ddp_options.reducer = reducer_options(options_);
  if (options_.sync_bn) {
    // Statistics on the buckets' own group: every rank issues the gathers and the bucket
    // all-reduces in the same graph order, one communicator and stream, never two
    // communicators racing (NCCL can deadlock so); identical statistics make broadcasts
    // unnecessary.
    set_batch_norm_stats_reducer(task_.model(), make_batch_norm_stats_reducer(world_));
    ddp_options.broadcast_buffers = false;
  }
  ddp_ = std::make_unique<DistributedDataParallel>(task_.shared_model(), world_, ddp_options);
}

std::string DataParallelStrategy::describe(int64_t batch_size) const {
  return str("data parallel over ", world_->world_size(), " processes (", world_->backend(),
             "), batch ", batch_size, " per process");
}

void DataParallelStrategy::before_micro_batch(size_t m, size_t micro) {
  SONATA_CHECK(ddp_, "DataParallelStrategy: a step before start()");
  // Gradients are reduced on the last micro-batch only (no_sync before it).
  no_sync_.emplace(ddp_->reducer(), m + 1 < micro);
  ddp_->broadcast_buffers();
  ddp_->prepare_for_backward();
}

void DataParallelStrategy::reduce_gradients() {
  SONATA_NVTX_RANGE("sonata::step::reducer_finish");
  ddp_->finish();
}

void DataParallelStrategy::before_evaluation() {
  if (ddp_) ddp_->broadcast_buffers();
}

}  // namespace sonata

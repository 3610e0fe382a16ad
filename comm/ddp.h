#pragma once
// DistributedDataParallel: a module replicated on every rank of a group, as PyTorch's DDP.
// Construction broadcasts rank 0's parameters and buffers (so every replica starts equal) and
// sets up the gradient reducer (comm/reducer.h) on the parameters. Per step, with M
// micro-steps of gradient accumulation:
//
//   for m in 0..M-1:
//     NoSync guard = ddp.no_sync(m + 1 < M);  // the last micro-step synchronises
//     ddp.broadcast_buffers();                // torch's broadcast_buffers=True, before forward
//     ddp.prepare_for_backward();
//     loss_m = criterion(ddp.module().forward(x_m)) / M;
//     loss_m.backward();
//   ddp.finish();                             // gradients now hold the world average
//   clip, optimizer.step();                   // no zero_grad needed: the next window zeroes
//
// forward() does the broadcast and prepare_for_backward() for single-input modules.
#include <memory>

#include "comm/process_group.h"
#include "comm/reducer.h"
#include "engine/nn/module.h"

namespace sonata {

struct DdpOptions {
  ReducerOptions reducer;
  bool broadcast_buffers = true;  // whether broadcast_buffers() and forward() send them
};

class DistributedDataParallel {
 public:
  // A collective: every rank constructs its replica with the same parameters and buffers.
  DistributedDataParallel(std::shared_ptr<Module> module, std::shared_ptr<ProcessGroup> group,
                          const DdpOptions& options = {});

  Module& module() const { return *module_; }
  Reducer& reducer() { return reducer_; }
  ProcessGroup& group() const { return *group_; }

  // Rank 0's buffers (BatchNorm running statistics) to every rank; a no-op when the option is
  // off or the world is one process. Call before each training forward.
  void broadcast_buffers();
  void prepare_for_backward() { reducer_.prepare_for_backward(); }
  void finish() { reducer_.finish(); }
  // A guard that turns synchronisation off while it lives (when `active`).
  [[nodiscard]] NoSync no_sync(bool active = true) { return NoSync(reducer_, active); }

  // broadcast_buffers() (in training), prepare_for_backward() (in training with grad mode
  // on), then the module's forward.
  Tensor forward(const Tensor& input);

 private:
  std::shared_ptr<Module> module_;
  std::shared_ptr<ProcessGroup> group_;
  DdpOptions options_;
  Reducer reducer_;
};

}  // namespace sonata

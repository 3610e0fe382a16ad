#pragma once
// The data-parallel gradient reducer (PyTorch DDP's Reducer with gradient_as_bucket_view):
// every parameter's gradient is a view into a flat per-bucket buffer, so backward's in-place
// accumulation writes straight into the buffer that is all-reduced, with no copies. A bucket's
// all-reduce (averaged over the world) starts the moment the last of its gradients is ready,
// while backward goes on; finish() only waits for the buckets.
//
// Buckets: parameters are assigned in reverse registration order (roughly the order backward
// finishes them), each bucket holding one dtype, closed once it reaches bucket_cap_bytes (the
// first one: first_bucket_cap_bytes). After the first synchronised backward the layout is
// rebuilt once from the order the gradients actually became ready; rank 0's order is
// broadcast and used on every rank, and the resulting layout is compared across ranks.
// Buckets launch strictly in index order on every rank, as collectives must match.
//
// One step, with gradient accumulation over M micro-steps:
//
//   for m in 0..M-1:
//     NoSync guard(reducer, m + 1 < M);   // or set_sync(false) ... set_sync(true)
//     reducer.prepare_for_backward();     // before every backward
//     loss_m.backward();
//   reducer.finish();                     // after the synchronised backward
//   optimizer.step();
//
// The first prepare_for_backward() after a finish() (or after construction) opens a window:
// the buffers are zeroed there, so the caller must not zero gradients itself (zero_grad with
// either setting is harmless but useless). A gradient that was dropped (set_to_none) or
// replaced since is re-installed as its view, so views are never lost silently: a replaced
// gradient's values are copied into the view first. Under no_sync the hooks only note which
// parameters got a gradient; the values accumulate locally in the views and are reduced with
// the next synchronised backward.
//
// Parameters without a gradient in a window: with find_unused_parameters = false, finish()
// throws on each rank that missed one, naming them (after every bucket was reduced, so the
// ranks stay in step; under the trainer that error ends the job). Nothing is exchanged for
// this and the host never waits: finish() only orders the caller's stream after the buckets
// (NCCL). With true, the per-parameter "got a gradient" counts are all-reduced and read on
// the host (a polled wait, as PyTorch's find_unused_parameters=True also waits): their
// buckets still reduce (their slices hold zeros, or what no_sync micro-steps left there);
// parameters that no rank used get their gradient set to none, so the optimizer leaves them
// alone as in one process.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "comm/process_group.h"
#include "engine/nn/module.h"

namespace sonata {

struct ReducerOptions {
  int64_t bucket_cap_bytes = int64_t(25) << 20;
  int64_t first_bucket_cap_bytes = int64_t(1) << 20;
  bool find_unused_parameters = false;
  // f16 or bf16: f32/f64 buckets travel in that dtype and are summed in f32 (see
  // comm/compressed_all_reduce.h); none: buckets travel in the gradients' own dtype.
  std::optional<DType> comm_dtype;
};

// What the reducer did during the latest synchronised backward and finish(), in order.
struct ReducerEvent {
  enum class Kind { grad_ready, bucket_launched, bucket_done };
  Kind kind;
  int64_t index;  // the parameter (grad_ready) or the bucket
  int64_t order;  // position in the log, from 0
};

class Reducer {
 public:
  // `parameters` (names for errors) must be leaves that require grad, on the group's device,
  // the same shapes and dtypes in the same order on every rank (checked: a collective).
  // The reducer registers grad-ready hooks on them; they do nothing once it is destroyed.
  Reducer(NamedTensors parameters, std::shared_ptr<ProcessGroup> group,
          const ReducerOptions& options = {});
  ~Reducer();
  Reducer(const Reducer&) = delete;
  Reducer& operator=(const Reducer&) = delete;

  // Before every backward, synchronised or not. Opens a window when none is open (rebuilds
  // the buckets if due, zeroes the buffers) and installs the gradient views.
  void prepare_for_backward();
  // After the synchronised backward: launches what backward left, waits for every bucket,
  // checks for unused parameters. A collective.
  void finish();

  // Whether backward reduces (true, the default) or only accumulates locally (no_sync).
  void set_sync(bool sync);
  bool sync() const;

  // Parameter indices per bucket, in launch order.
  std::vector<std::vector<size_t>> bucket_layout() const;
  // The order in which parameters became ready in the latest synchronised backward, then
  // (after finish()) those that got no gradient in it.
  std::vector<size_t> ready_order() const;
  // Whether the layout has been rebuilt from an observed order (once, after the first step).
  bool rebuilt() const;
  const std::vector<ReducerEvent>& events() const;

 private:
  struct State;
  std::shared_ptr<State> state_;  // hooks hold it weakly
};

// Turns synchronisation off for its lifetime (PyTorch's ddp.no_sync()), restoring the
// previous setting after. `active` false makes it a no-op, for the last micro-step.
class NoSync {
 public:
  explicit NoSync(Reducer& reducer, bool active = true);
  ~NoSync();
  NoSync(const NoSync&) = delete;
  NoSync& operator=(const NoSync&) = delete;

 private:
  Reducer& reducer_;
  bool previous_;
};

}  // namespace sonata

#include "comm/reducer.h"

#include <algorithm>
#include <numeric>
#include <string>
#include <utility>

#include "base/error.h"
#include "base/nvtx.h"
#include "comm/bucket_layout.h"
#include "comm/compressed_all_reduce.h"
#include "engine/autograd/grad_mode.h"

namespace sonata {
namespace {

// Host values on `device` for a collective: on a GPU through pinned memory, so the copy is
// queued on the stream instead of serialising it as a pageable copy does.
Tensor to_group_device(const std::vector<int64_t>& values, Device device) {
  const Tensor host = from_vector(values, {int64_t(values.size())});
  if (device.is_cpu()) return host;
  TensorOptions pinned = host.options();
  pinned.pinned = true;
  Tensor staged = empty(host.shape(), pinned);
  staged.copy_(host);
  return staged.to(device, /*non_blocking=*/true);
}

// Every rank's `value`, gathered: one collective.
std::vector<int64_t> gather_all(ProcessGroup& group, int64_t value) {
  Tensor mine = to_group_device({value}, group.device());
  Tensor all = zeros({group.world_size()}, TensorOptions{}.with(DType::i64).with(group.device()));
  // synchronize(), not wait(): the host reads the result, and only synchronize() polls
  // with the group's timeout instead of blocking in the device copy.
  group.all_gather(mine, all)->synchronize();
  return all.to_vector<int64_t>();
}

// The ranks whose value differs from rank 0's, for an error message ("1, 2").
std::string ranks_differing_from_root(const std::vector<int64_t>& values) {
  std::string ranks;
  for (size_t r = 1; r < values.size(); ++r)
    if (values[r] != values[0]) ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
  return ranks;
}

uint64_t signature(const NamedTensors& parameters) {
  Fnv1a hash;
  hash.add(parameters.size());
  for (const auto& [name, p] : parameters) {
    hash.add(uint64_t(p.dtype()));
    hash.add(p.shape().size());
    for (int64_t size : p.shape()) hash.add(uint64_t(size));
  }
  return hash.value();
}

}  // namespace

struct Reducer::State {
  struct Bucket {
    Tensor flat;  // the gradients of `params`, back to back
    std::vector<size_t> params;
    int64_t pending = 0;  // parameters not yet ready in this backward
    std::shared_ptr<Work> work;
    bool done = false;
  };

  NamedTensors params;
  std::shared_ptr<ProcessGroup> group;
  std::shared_ptr<ProcessGroup> gather_group;  // compressed buckets' second phase
  ReducerOptions options;

  std::vector<Bucket> buckets;
  std::vector<Tensor> views;          // per parameter: its gradient inside its bucket
  std::vector<size_t> bucket_of;      // per parameter
  std::vector<size_t> pending_order;  // a rebuilt order to apply at the next window
  bool rebuilt = false;

  bool sync = true;
  bool window_open = false;   // between the first prepare_for_backward of a step and finish
  bool expect_hooks = false;  // between a synchronised prepare_for_backward and finish
  std::vector<char> ready;    // per parameter, this synchronised backward
  std::vector<char> used;     // per parameter, any backward of this window
  std::vector<size_t> order;  // ready order of this synchronised backward
  size_t next_launch = 0;
  size_t next_done = 0;
  std::vector<ReducerEvent> events;

  std::vector<Tensor> tensors() const {
    std::vector<Tensor> all;
    for (const auto& [name, p] : params) all.push_back(p);
    return all;
  }

  void log(ReducerEvent::Kind kind, size_t index) {
    events.push_back({kind, int64_t(index), int64_t(events.size())});
  }

  void build(const std::vector<size_t>& ready_order) {
    const std::vector<std::vector<size_t>> layout = assign_buckets(
        tensors(), ready_order, options.first_bucket_cap_bytes, options.bucket_cap_bytes);
    buckets.assign(layout.size(), {});
    views.assign(params.size(), Tensor());
    bucket_of.assign(params.size(), 0);
    NoGradGuard no_grad;
    for (size_t b = 0; b < layout.size(); ++b) {
      Bucket& bucket = buckets[b];
      bucket.params = layout[b];
      int64_t numel = 0;
      for (size_t i : bucket.params) numel += params[i].second.numel();
      const Tensor& first = params[bucket.params.front()].second;
      bucket.flat = zeros({numel}, first.options());
      int64_t offset = 0;
      for (size_t i : bucket.params) {
        const Tensor& p = params[i].second;
        views[i] = bucket.flat.slice(0, offset, offset + p.numel()).view(p.shape());
        bucket_of[i] = b;
        offset += p.numel();
      }
    }
  }

  // Makes parameter i's gradient its view; a replaced gradient's values move into the view
  // (unless the window is just starting, when gradients start from zero).
  void install_view(size_t i, bool keep_values) {
    Tensor p = params[i].second;
    const Tensor grad = p.grad();
    if (grad.defined() && grad.same(views[i])) return;
    SONATA_CHECK(p.shape() == views[i].shape() && p.dtype() == views[i].dtype() &&
                     p.device() == views[i].device(),
                 "Reducer: parameter '", params[i].first,
                 "' changed shape, dtype or device after the reducer was built; move or cast "
                 "the model before wrapping it");
    NoGradGuard no_grad;
    if (keep_values) {
      if (grad.defined())
        views[i].copy_(grad);
      else
        views[i].zero_();
    }
    p.set_grad(views[i]);
  }

  void launch(size_t b) {
    SONATA_NVTX_RANGE("sonata::reducer::launch");
    Tensor& flat = buckets[b].flat;
    if (options.comm_dtype && !is_half(flat.dtype()))
      buckets[b].work =
          all_reduce_compressed(*group, *gather_group, flat, *options.comm_dtype, ReduceOp::avg);
    else
      buckets[b].work = group->all_reduce(flat, ReduceOp::avg);
    log(ReducerEvent::Kind::bucket_launched, b);
  }

  // Launches, in index order, every bucket whose gradients are all ready.
  void launch_ready() {
    while (next_launch < buckets.size() && buckets[next_launch].pending == 0) launch(next_launch++);
  }

  // Notes buckets that have finished, in order; also lets MPI progress its collectives.
  void poll() {
    while (next_done < next_launch && buckets[next_done].work->completed()) {
      buckets[next_done].done = true;
      log(ReducerEvent::Kind::bucket_done, next_done++);
    }
  }

  void mark_ready(size_t i) {
    ready[i] = 1;
    order.push_back(i);
    --buckets[bucket_of[i]].pending;
  }

  void on_grad_ready(size_t i) {
    used[i] = 1;
    install_view(i, true);
    if (!sync) return;
    SONATA_CHECK(expect_hooks, "Reducer: parameter '", params[i].first,
                 "' got a gradient in a synchronised backward that prepare_for_backward() did "
                 "not precede");
    SONATA_CHECK(!ready[i], "Reducer: parameter '", params[i].first,
                 "' got a gradient twice in one synchronised backward; call "
                 "prepare_for_backward() before each backward and finish() after it");
    mark_ready(i);
    log(ReducerEvent::Kind::grad_ready, i);
    launch_ready();
    poll();
  }

  // Rank 0's ready order, checked to be a permutation of every parameter.
  std::vector<size_t> agreed_order() {
    std::vector<int64_t> mine(order.begin(), order.end());
    Tensor shared = to_group_device(mine, group->device());
    group->broadcast(shared, 0)->synchronize();
    std::vector<size_t> agreed;
    std::vector<char> seen(params.size(), 0);
    for (int64_t i : shared.to_vector<int64_t>()) {
      SONATA_CHECK(i >= 0 && size_t(i) < params.size() && !seen[size_t(i)],
                   "Reducer: rank 0's gradient-ready order is not a permutation of the ",
                   params.size(), " parameters");
      seen[size_t(i)] = 1;
      agreed.push_back(size_t(i));
    }
    return agreed;
  }

  // Compares the layout `order` gives with every rank's: one collective.
  void check_layout_agrees(const std::vector<size_t>& order) {
    Fnv1a hash;
    for (const std::vector<size_t>& bucket : assign_buckets(
             tensors(), order, options.first_bucket_cap_bytes, options.bucket_cap_bytes)) {
      hash.add(bucket.size());
      for (size_t i : bucket) hash.add(i);
    }
    const std::vector<int64_t> all = gather_all(*group, int64_t(hash.value()));
    const std::string differing = ranks_differing_from_root(all);
    SONATA_CHECK(differing.empty(), "Reducer: the rebuilt bucket layout of rank(s) ", differing,
                 " differs from rank 0's");
  }
};

Reducer::Reducer(NamedTensors parameters, std::shared_ptr<ProcessGroup> group,
                 const ReducerOptions& options)
    : state_(std::make_shared<State>()) {
  SONATA_CHECK(group != nullptr, "Reducer: the process group is null");
  SONATA_CHECK(!parameters.empty(), "Reducer: got no parameters");
  SONATA_CHECK(options.bucket_cap_bytes > 0 && options.first_bucket_cap_bytes > 0,
               "Reducer: bucket caps must be positive, got bucket_cap_bytes ",
               options.bucket_cap_bytes, " and first_bucket_cap_bytes ",
               options.first_bucket_cap_bytes);
  SONATA_CHECK(!options.comm_dtype || is_half(*options.comm_dtype),
               "Reducer: comm_dtype must be f16 or bf16, got ", dtype_name(*options.comm_dtype));
  for (const auto& [name, p] : parameters) {
    SONATA_CHECK(p.defined() && p.is_leaf() && p.requires_grad(), "Reducer: parameter '", name,
                 "' must be a leaf tensor that requires grad");
    SONATA_CHECK(is_floating(p.dtype()), "Reducer: parameter '", name, "' is ",
                 dtype_name(p.dtype()), ", not floating-point");
    SONATA_CHECK(p.device() == group->device(), "Reducer: parameter '", name, "' is on ",
                 p.device().str(), " but the process group communicates on ",
                 group->device().str());
  }
  State& s = *state_;
  s.params = std::move(parameters);
  s.group = std::move(group);
  s.options = options;
  // A stream-ordered group (NCCL) issues both phases of a compressed all-reduce at once, in
  // bucket order, on its one communicator; a second one would race it (NCCL can deadlock).
  if (options.comm_dtype)
    s.gather_group = s.group->stream_ordered() ? s.group : s.group->split(0, s.group->rank());

  const std::vector<int64_t> signatures = gather_all(*s.group, int64_t(signature(s.params)));
  const std::string differing = ranks_differing_from_root(signatures);
  SONATA_CHECK(differing.empty(), "Reducer: the parameters of rank(s) ", differing,
               " differ from rank 0's in number, shapes or dtypes (", s.params.size(),
               " parameters on rank ", s.group->rank(), ")");

  std::vector<size_t> reverse(s.params.size());
  std::iota(reverse.rbegin(), reverse.rend(), size_t(0));
  s.build(reverse);
  s.ready.assign(s.params.size(), 0);
  s.used.assign(s.params.size(), 0);

  const std::weak_ptr<State> weak = state_;
  for (size_t i = 0; i < s.params.size(); ++i) {
    s.params[i].second.register_grad_ready_hook([weak, i](Tensor&) {
      if (const std::shared_ptr<State> state = weak.lock()) state->on_grad_ready(i);
    });
  }
}

Reducer::~Reducer() = default;

void Reducer::prepare_for_backward() {
  State& s = *state_;
  SONATA_CHECK(!s.expect_hooks || s.next_launch == 0,
               "Reducer: prepare_for_backward() after a synchronised backward that finish() did "
               "not complete");
  const bool opening = !s.window_open;
  if (opening) {
    if (!s.pending_order.empty()) {
      s.build(s.pending_order);
      s.pending_order.clear();
      s.rebuilt = true;
    }
    NoGradGuard no_grad;
    for (auto& bucket : s.buckets) bucket.flat.zero_();
    std::fill(s.used.begin(), s.used.end(), 0);
    s.window_open = true;
  }
  for (size_t i = 0; i < s.params.size(); ++i) s.install_view(i, !opening);
  if (!s.sync) return;
  s.expect_hooks = true;
  std::fill(s.ready.begin(), s.ready.end(), 0);
  s.order.clear();
  for (auto& bucket : s.buckets) {
    bucket.pending = int64_t(bucket.params.size());
    bucket.work.reset();
    bucket.done = false;
  }
  s.next_launch = 0;
  s.next_done = 0;
  s.events.clear();
}

void Reducer::finish() {
  SONATA_NVTX_RANGE("sonata::reducer::finish");
  State& s = *state_;
  SONATA_CHECK(s.sync, "Reducer: finish() with synchronisation off (inside no_sync)");
  SONATA_CHECK(s.expect_hooks, "Reducer: finish() without prepare_for_backward() and a backward");
  // Parameters without a gradient reduce what their slice holds (zeros, or no_sync sums).
  for (size_t i = 0; i < s.params.size(); ++i)
    if (!s.ready[i]) s.mark_ready(i);
  s.launch_ready();
  // Who used which parameter matters across ranks only with find_unused_parameters; without
  // it no extra collective, no host copy and no host wait happen here (as in PyTorch).
  std::shared_ptr<Work> counts_work;
  Tensor counts;
  if (s.options.find_unused_parameters) {
    counts = to_group_device(std::vector<int64_t>(s.used.begin(), s.used.end()), s.group->device());
    counts_work = s.group->all_reduce(counts, ReduceOp::sum);
  }
  for (size_t b = s.next_done; b < s.buckets.size(); ++b) {
    s.buckets[b].work->wait();
    s.buckets[b].done = true;
    s.log(ReducerEvent::Kind::bucket_done, b);
  }
  s.next_done = s.buckets.size();
  s.expect_hooks = false;
  s.window_open = false;
  s.next_launch = 0;

  // The first synchronised step decides the layout for good: rank 0's observed order (then
  // the parameters without a gradient), applied when the next window opens.
  if (!s.rebuilt && s.pending_order.empty()) {
    s.pending_order = s.agreed_order();
    s.check_layout_agrees(s.pending_order);
  }

  if (s.options.find_unused_parameters) {
    counts_work->synchronize();  // the host reads the counts: a polled wait
    const std::vector<int64_t> users = counts.to_vector<int64_t>();
    for (size_t i = 0; i < s.params.size(); ++i)
      if (users[i] == 0) s.params[i].second.set_grad(Tensor());
    return;
  }
  // Every bucket was launched and waited for, so the ranks stay in step even when this one
  // throws; the job's failure handling ends the others.
  std::string missing;
  for (size_t i = 0; i < s.params.size(); ++i)
    if (!s.used[i]) missing += str(missing.empty() ? "" : ", ", "'", s.params[i].first, "'");
  SONATA_CHECK(missing.empty(), "Reducer: parameter(s) ", missing, " got no gradient on rank ",
               s.group->rank(),
               " in this step; pass find_unused_parameters = true if the model "
               "leaves them out on purpose");
}

void Reducer::set_sync(bool sync) {
  state_->sync = sync;
}

bool Reducer::sync() const {
  return state_->sync;
}

std::vector<std::vector<size_t>> Reducer::bucket_layout() const {
  std::vector<std::vector<size_t>> layout;
  for (const auto& bucket : state_->buckets) layout.push_back(bucket.params);
  return layout;
}

std::vector<size_t> Reducer::ready_order() const {
  return state_->order;
}

bool Reducer::rebuilt() const {
  return state_->rebuilt;
}

const std::vector<ReducerEvent>& Reducer::events() const {
  return state_->events;
}

NoSync::NoSync(Reducer& reducer, bool active) : reducer_(reducer), previous_(reducer.sync()) {
  if (active) reducer_.set_sync(false);
}

NoSync::~NoSync() {
  reducer_.set_sync(previous_);
}

}  // namespace sonata

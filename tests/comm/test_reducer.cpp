// The gradient reducer and DistributedDataParallel on the group this run was started with
// (world 1, mpiexec -np 2 and 3). The truth is one process training on the whole global
// batch: every rank computes it itself, in float64, from the same seeded data, and DDP's
// weights must match it to 1e-12 relative. Collectives run in the same order on every rank,
// so checks use CHECK, never REQUIRE, between them.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "base/error.h"
#include "comm/bucket_layout.h"
#include "comm/ddp.h"
#include "comm/reducer.h"
#include "engine/autograd/grad_mode.h"
#include "engine/ops.h"
#include "engine/optim/sgd.h"
#include "engine/random.h"
#include "models/layers/linear.h"
#include "tests/comm/comm_group.h"
#include "tests/comm/recording_group.h"

using namespace sonata;
using sonata::testing::comm_group;
using sonata::testing::shared_comm_group;

namespace {

// The process group as a shared_ptr that does not own it (the test main does).
// Linear(20, 32) - ReLU - Linear(32, 5) in float64, initialised from `seed`.
class Mlp : public Module {
 public:
  explicit Mlp(uint64_t seed) {
    manual_seed(seed);
    fc1_ = register_module("fc1", std::make_shared<Linear>(20, 32));
    fc2_ = register_module("fc2", std::make_shared<Linear>(32, 5));
    to(DType::f64);
  }
  Tensor forward(const Tensor& x) override { return fc2_->forward(relu(fc1_->forward(x))); }

 private:
  std::shared_ptr<Linear> fc1_, fc2_;
};

Tensor mse(const Tensor& prediction, const Tensor& target) {
  return mean(pow(prediction - target, 2.0));
}

// The largest |a - b| over the largest |b|, across every parameter.
double relative_difference(const Module& a, const Module& b) {
  double error = 0, scale = 0;
  const NamedTensors pa = a.named_parameters(), pb = b.named_parameters();
  for (size_t k = 0; k < pa.size(); ++k) {
    const std::vector<double> x = pa[k].second.to_vector<double>();
    const std::vector<double> y = pb[k].second.to_vector<double>();
    for (size_t i = 0; i < x.size(); ++i) {
      error = std::max(error, std::abs(x[i] - y[i]));
      scale = std::max(scale, std::abs(y[i]));
    }
  }
  return error / scale;
}

// Rank-dependent weights, so that only DDP's broadcast from rank 0 makes the replicas equal.
void perturb(Module& module, int rank) {
  NoGradGuard no_grad;
  for (Tensor& p : module.parameters()) p.add_(full(p.shape(), 0.01 * rank, p.options()));
}

struct Data {
  Tensor x, y;  // every row any rank uses in any step: [steps * micro * world * batch, ...]
};

Data make_data(int64_t rows, uint64_t seed) {
  Generator generator(seed);
  const TensorOptions f64 = TensorOptions{}.with(DType::f64);
  return {randn({rows, 20}, f64, &generator), randn({rows, 5}, f64, &generator)};
}

SgdOptions sgd_options() {
  SgdOptions options;
  options.lr = 0.1;
  options.momentum = 0.9;
  options.weight_decay = 1e-3;
  return options;
}

// K steps of DDP (world W, `batch` rows per rank and micro-step, `micro` micro-steps with
// no_sync on all but the last) against one process stepping on all W * micro * batch rows.
// With a 16-bit comm_dtype the gradients are rounded on the wire, so the weights must stay
// within `tolerance` but must not be equal (the option really compresses).
void check_equivalent_to_one_process(const ReducerOptions& reducer_options, int64_t micro,
                                     double tolerance = 1e-12) {
  ProcessGroup& group = comm_group();
  const int64_t W = group.world_size(), r = group.rank();
  const int64_t batch = 3, steps = 3, global = W * micro * batch;
  const Data data = make_data(steps * global, 1234);

  auto model = std::make_shared<Mlp>(7);
  perturb(*model, int(r));
  DdpOptions options;
  options.reducer = reducer_options;
  DistributedDataParallel ddp(model, shared_comm_group(), options);
  SGD optimizer(model->parameters(), sgd_options());

  Mlp reference(7);
  SGD reference_optimizer(reference.parameters(), sgd_options());

  for (int64_t step = 0; step < steps; ++step) {
    for (int64_t m = 0; m < micro; ++m) {
      NoSync no_sync = ddp.no_sync(m + 1 < micro);
      const int64_t first = step * global + (m * W + r) * batch;
      const Tensor x = data.x.slice(0, first, first + batch);
      const Tensor y = data.y.slice(0, first, first + batch);
      Tensor loss = mse(ddp.forward(x), y) * (1.0 / double(micro));
      loss.backward();
    }
    ddp.finish();
    optimizer.step();

    reference_optimizer.zero_grad();
    const Tensor x = data.x.slice(0, step * global, (step + 1) * global);
    const Tensor y = data.y.slice(0, step * global, (step + 1) * global);
    mse(reference.forward(x), y).backward();
    reference_optimizer.step();
  }
  const double difference = relative_difference(*model, reference);
  INFO("world " << W << ", caps " << reducer_options.first_bucket_cap_bytes << " / "
                << reducer_options.bucket_cap_bytes << ", micro-steps " << micro
                << ": relative difference " << difference);
  CHECK(difference <= tolerance);
  if (reducer_options.comm_dtype) CHECK(difference > 1e-12);
  // Training moved the weights: equality is not the trivial one of untouched replicas.
  Mlp initial(7);
  CHECK(relative_difference(*model, initial) > 1e-3);
}

ReducerOptions caps(int64_t first, int64_t rest) {
  ReducerOptions options;
  options.first_bucket_cap_bytes = first;
  options.bucket_cap_bytes = rest;
  return options;
}

}  // namespace

TEST_CASE("assign_buckets fills per-dtype buckets up to their caps in the given order",
          "[comm][reducer]") {
  const TensorOptions f32 = TensorOptions{}, f64 = f32.with(DType::f64);
  // Bytes: p0 40 (f32), p1 80 (f64), p2 16 (f32), p3 64 (f64), p4 8 (f32).
  const std::vector<Tensor> params{zeros({10}, f32), zeros({10}, f64), zeros({4}, f32),
                                   zeros({8}, f64), zeros({2}, f32)};
  using Layout = std::vector<std::vector<size_t>>;
  // One byte: every parameter is its own bucket, in the order given.
  CHECK(assign_buckets(params, {4, 3, 2, 1, 0}, 1, 1) == Layout{{4}, {3}, {2}, {1}, {0}});
  // Unbounded: one bucket per dtype, ordered by when their last member comes (p0 for f32).
  CHECK(assign_buckets(params, {4, 3, 2, 1, 0}, 1 << 30, 1 << 30) == Layout{{3, 1}, {4, 2, 0}});
  // First cap 20 bytes: f32 closes {p4, p2} at 24 bytes, f64 closes {p3} at 64; the rest
  // (cap 1000) stay open: {p0} and {p1}, ordered by position.
  CHECK(assign_buckets(params, {4, 3, 2, 1, 0}, 20, 1000) == Layout{{3}, {4, 2}, {1}, {0}});
}

TEST_CASE("DDP over R ranks with batch b equals one process with batch R*b in float64",
          "[comm][reducer][ddp]") {
  const std::vector<ReducerOptions> all_caps{caps(1, 1), caps(1, 1 << 30), caps(2000, 2000),
                                             caps(int64_t(1) << 30, int64_t(1) << 30)};
  for (const ReducerOptions& options : all_caps) {
    SECTION("caps " + std::to_string(options.first_bucket_cap_bytes) + " and " +
            std::to_string(options.bucket_cap_bytes)) {
      check_equivalent_to_one_process(options, 1);
    }
  }
}

TEST_CASE("DDP with two no_sync micro-steps equals one process on the whole accumulated batch",
          "[comm][reducer][ddp]") {
  for (const ReducerOptions& options : {caps(1, 1), caps(int64_t(1) << 30, int64_t(1) << 30)}) {
    SECTION("caps " + std::to_string(options.bucket_cap_bytes)) {
      check_equivalent_to_one_process(options, 2);
    }
  }
}

TEST_CASE("DDP with a 16-bit all-reduce stays within its rounding of one process",
          "[comm][reducer][ddp][compressed]") {
  // bf16 keeps 8 significant bits, f16 11: three SGD steps move the weights by lr * grad, so
  // the rounding of the averaged gradients shows at about 2^-8 (2^-11) of that.
  for (DType wire : {DType::bf16, DType::f16}) {
    SECTION(str("wire ", dtype_name(wire))) {
      ReducerOptions options = caps(1000, 2000);
      options.comm_dtype = wire;
      check_equivalent_to_one_process(options, 1, wire == DType::bf16 ? 2e-3 : 3e-4);
    }
  }
}

TEST_CASE("the bucket layout follows reverse parameter order and its byte caps",
          "[comm][reducer]") {
  Mlp model(3);  // fc1.weight 5120 bytes, fc1.bias 256, fc2.weight 1280, fc2.bias 40
  using Layout = std::vector<std::vector<size_t>>;
  CHECK(Reducer(model.named_parameters(), shared_comm_group(), caps(1, 1)).bucket_layout() ==
        Layout{{3}, {2}, {1}, {0}});
  CHECK(
      Reducer(model.named_parameters(), shared_comm_group(), caps(1000, 1 << 30)).bucket_layout() ==
      Layout{{3, 2}, {1, 0}});
  CHECK(Reducer(model.named_parameters(), shared_comm_group(), caps(1 << 30, 1 << 30))
            .bucket_layout() == Layout{{3, 2, 1, 0}});
}

TEST_CASE("with small buckets the first all-reduce starts before backward has finished",
          "[comm][reducer]") {
  Mlp model(5);
  const Data data = make_data(4, 99);
  for (const bool small : {true, false}) {
    Reducer reducer(model.named_parameters(), shared_comm_group(),
                    small ? caps(1, 1) : caps(1 << 30, 1 << 30));
    for (int step = 0; step < 2; ++step) {  // before and after the rebuild
      reducer.prepare_for_backward();
      mse(model.forward(data.x), data.y).backward();
      reducer.finish();
      int64_t first_launch = -1, last_ready = -1, ready = 0, launched = 0, done = 0;
      for (const ReducerEvent& event : reducer.events()) {
        if (event.kind == ReducerEvent::Kind::grad_ready) {
          last_ready = event.order;
          ++ready;
        } else if (event.kind == ReducerEvent::Kind::bucket_launched) {
          if (first_launch < 0) first_launch = event.order;
          ++launched;
        } else {
          ++done;
        }
      }
      const int64_t buckets = int64_t(reducer.bucket_layout().size());
      INFO((small ? "one parameter per bucket" : "one bucket") << ", step " << step);
      CHECK(ready == 4);
      CHECK(launched == buckets);
      CHECK(done == buckets);
      if (small)
        CHECK(first_launch < last_ready);  // communication overlaps the rest of backward
      else
        CHECK(first_launch > last_ready);  // the one bucket waits for every gradient
    }
  }
}

namespace {

// Two branches summed, built in a rank-dependent order: backward readies the branch built last
// first, so with `flip` (even ranks) a's gradients come first, unlike the initial reverse
// parameter order, and odd ranks observe another order than rank 0.
class TwoBranches : public Module {
 public:
  TwoBranches() {
    manual_seed(11);
    a_ = register_module("a", std::make_shared<Linear>(4, 3));
    b_ = register_module("b", std::make_shared<Linear>(4, 3));
    to(DType::f64);
  }
  Tensor forward(const Tensor& x) override {
    if (flip) {
      const Tensor from_b = b_->forward(x);
      return a_->forward(x) + from_b;
    }
    const Tensor from_a = a_->forward(x);
    return from_a + b_->forward(x);
  }
  bool flip = false;

 private:
  std::shared_ptr<Linear> a_, b_;
};

// Rank 0's values of `local` on every rank (one broadcast).
std::vector<int64_t> from_rank0(const std::vector<size_t>& local) {
  Tensor t = from_vector(std::vector<int64_t>(local.begin(), local.end()), {int64_t(local.size())});
  comm_group().broadcast(t, 0)->wait();
  return t.to_vector<int64_t>();
}

}  // namespace

TEST_CASE("buckets are rebuilt once from rank 0's observed gradient-ready order",
          "[comm][reducer]") {
  ProcessGroup& group = comm_group();
  TwoBranches model;
  model.flip = group.rank() % 2 == 0;
  const Data data = make_data(4, 5);
  const Tensor x = data.x.slice(1, 0, 4).contiguous(), y = data.y.slice(1, 0, 3).contiguous();
  // Recorded by the test's own hooks, which outlive the loop (hooks cannot be removed).
  auto hook_order = std::make_shared<std::vector<size_t>>();
  NamedTensors params = model.named_parameters();
  for (size_t i = 0; i < params.size(); ++i)
    params[i].second.register_grad_ready_hook(
        [hook_order, i](Tensor&) { hook_order->push_back(i); });

  for (const bool small : {true, false}) {
    Reducer reducer(model.named_parameters(), shared_comm_group(),
                    small ? caps(1, 1) : caps(1 << 30, 1 << 30));
    const auto initial = reducer.bucket_layout();
    for (int step = 0; step < 3; ++step) {
      hook_order->clear();
      reducer.prepare_for_backward();
      CHECK(reducer.rebuilt() == (step > 0));
      mse(model.forward(x), y).backward();
      reducer.finish();
      CHECK(reducer.ready_order() == *hook_order);
      if (step == 0) {
        const std::vector<int64_t> root_order = from_rank0(*hook_order);
        // Every parameter's gradient has arrived, in an order unlike the initial reverse one
        // (the branch built last comes first): the rebuild has something to do.
        CHECK(root_order.size() == 4);
        reducer.prepare_for_backward();  // opens the next window: the rebuild applies
        std::vector<int64_t> flattened;
        for (const auto& bucket : reducer.bucket_layout())
          for (size_t i : bucket) flattened.push_back(int64_t(i));
        INFO("rank " << group.rank() << ", " << (small ? "small buckets" : "one bucket"));
        CHECK(flattened == root_order);
        if (small) CHECK(reducer.bucket_layout().size() == 4);
        if (small) CHECK(reducer.bucket_layout() != initial);
        // Odd ranks saw another order, yet use rank 0's.
        if (!model.flip)
          CHECK(std::vector<int64_t>(hook_order->begin(), hook_order->end()) != root_order);
        mse(model.forward(x), y).backward();
        reducer.finish();
      }
    }
  }
}

TEST_CASE("a parameter without a gradient is an error naming it unless find_unused_parameters",
          "[comm][reducer]") {
  ProcessGroup& group = comm_group();
  const int64_t W = group.world_size();
  TwoBranches model;  // the test uses only branch a, through a's own forward
  const NamedTensors params = model.named_parameters();
  Module& a = *model.children()[0].second;
  const Data data = make_data(4, 8);
  const Tensor x = data.x.slice(1, 0, 4).contiguous(), y = data.y.slice(1, 0, 3).contiguous();

  SECTION("without the flag") {
    Reducer reducer(params, shared_comm_group());
    for (int step = 0; step < 2; ++step) {  // the error leaves the reducer usable
      reducer.prepare_for_backward();
      mse(a.forward(x), y).backward();
      std::string message;
      try {
        reducer.finish();
      } catch (const Error& e) {
        message = e.what();
      }
      INFO(message);
      CHECK(message.find("'b.weight'") != std::string::npos);
      CHECK(message.find("'b.bias'") != std::string::npos);
      CHECK(message.find("'a.weight'") == std::string::npos);
      CHECK(message.find("find_unused_parameters") != std::string::npos);
    }
  }
  SECTION("with the flag") {
    ReducerOptions options;
    options.find_unused_parameters = true;
    Reducer reducer(params, shared_comm_group(), options);
    for (int step = 0; step < 2; ++step) {
      reducer.prepare_for_backward();
      mse(a.forward(x), y).backward();
      CHECK_NOTHROW(reducer.finish());
      // Every rank used the same data: the average is the local gradient, recomputed here.
      TwoBranches fresh;
      Module& fresh_a = *fresh.children()[0].second;
      mse(fresh_a.forward(x), y).backward();
      const NamedTensors expected = fresh.named_parameters();
      for (size_t k = 0; k < 2; ++k) {
        const std::vector<double> got = params[k].second.grad().to_vector<double>();
        const std::vector<double> want = expected[k].second.grad().to_vector<double>();
        double error = 0;
        for (size_t i = 0; i < got.size(); ++i) error = std::max(error, std::abs(got[i] - want[i]));
        CHECK(error <= 1e-14);
      }
      // Unused by every rank: no gradient, so the optimizer leaves it alone.
      CHECK_FALSE(params[2].second.grad().defined());
      CHECK_FALSE(params[3].second.grad().defined());
    }
  }
  SECTION("used on rank 0 only") {
    const bool uses_b = group.rank() == 0;
    auto run = [&](Reducer& reducer) {
      reducer.prepare_for_backward();
      mse(uses_b ? model.forward(x) : a.forward(x), y).backward();
      reducer.finish();
    };
    if (W > 1) {
      Reducer strict(params, shared_comm_group());  // gone before the next one hooks in
      std::string message;
      try {
        run(strict);
      } catch (const Error& e) {
        message = e.what();
      }
      INFO(message);
      // Each rank knows only its own use (nothing is exchanged for this check): the ranks
      // that missed b say so, rank 0 finishes; the collectives stayed in step either way.
      if (uses_b)
        CHECK(message.empty());
      else
        CHECK(message.find("'b.weight', 'b.bias' got no gradient on rank " +
                           std::to_string(group.rank())) != std::string::npos);
    }
    ReducerOptions options;
    options.find_unused_parameters = true;
    Reducer lenient(params, shared_comm_group(), options);
    run(lenient);
    // b's gradient is rank 0's divided by the world: the others contribute zeros.
    TwoBranches fresh;
    mse(fresh.forward(x), y).backward();
    const std::vector<double> got = params[2].second.grad().to_vector<double>();
    const std::vector<double> want = fresh.named_parameters()[2].second.grad().to_vector<double>();
    double error = 0;
    for (size_t i = 0; i < got.size(); ++i)
      error = std::max(error, std::abs(got[i] - want[i] / double(W)));
    CHECK(error <= 1e-14);
  }
}

TEST_CASE("gradients are views into the buckets and stay so whatever zero_grad does",
          "[comm][reducer]") {
  Mlp model(4);
  const Data data = make_data(4, 21);
  Reducer reducer(model.named_parameters(), shared_comm_group(), caps(1, 1 << 30));
  SGD optimizer(model.parameters(), sgd_options());
  std::vector<const void*> storages;
  for (int step = 0; step < 3; ++step) {
    optimizer.zero_grad(step % 2 == 0);  // set_to_none, then zero in place
    reducer.prepare_for_backward();
    mse(model.forward(data.x), data.y).backward();
    reducer.finish();
    // Gradients share a storage exactly when they share a bucket (two buckets here).
    std::vector<const void*> now;
    for (const Tensor& p : model.parameters()) now.push_back(p.grad().storage().get());
    const auto layout = reducer.bucket_layout();
    CHECK(layout.size() == 2);
    for (const auto& bucket : layout)
      for (const auto& other : layout)
        CHECK((now[bucket.front()] == now[other.front()]) == (&bucket == &other));
    for (const auto& bucket : layout)
      for (size_t i : bucket) CHECK(now[i] == now[bucket.front()]);
    if (step == 2) CHECK(now == storages);  // after the rebuild (step 1), no new buffers
    storages = now;
  }
  // A gradient dropped in the middle of a window is re-installed as its view at the hook.
  reducer.prepare_for_backward();
  model.parameters()[0].set_grad(Tensor());
  mse(model.forward(data.x), data.y).backward();
  reducer.finish();
  CHECK(model.parameters()[0].grad().storage().get() == storages[0]);
}

TEST_CASE("reducer misuse is reported in one sentence", "[comm][reducer]") {
  ProcessGroup& group = comm_group();
  Mlp model(4);
  const Data data = make_data(4, 2);
  Reducer reducer(model.named_parameters(), shared_comm_group());
  CHECK_THROWS_WITH(reducer.finish(), Catch::Contains("without prepare_for_backward"));
  {
    NoSync no_sync(reducer);
    reducer.prepare_for_backward();
    mse(model.forward(data.x), data.y).backward();
    CHECK(reducer.events().empty());  // no_sync: nothing launched
    CHECK_THROWS_WITH(reducer.finish(), Catch::Contains("no_sync"));
  }
  CHECK(reducer.sync());
  // Replicas that differ are refused at construction, on every rank.
  if (group.world_size() > 1) {
    Tensor p = zeros({group.rank() == 0 ? 3 : 4}, TensorOptions{}.with(DType::f64))
                   .set_requires_grad(true);
    CHECK_THROWS_WITH(Reducer({{"p", p}}, shared_comm_group()),
                      Catch::Contains("differ from rank 0"));
  }
}

TEST_CASE("finish() adds no collective and no host wait unless find_unused_parameters",
          "[comm][reducer]") {
  const Data data = make_data(4, 9);
  const Tensor x = data.x.slice(1, 0, 20).contiguous(), y = data.y.slice(1, 0, 5).contiguous();
  for (const bool find_unused : {false, true}) {
    INFO("find_unused_parameters " << find_unused);
    Mlp model(3);
    auto recording = std::make_shared<sonata::testing::RecordingGroup>(shared_comm_group());
    ReducerOptions options = caps(1, 1);  // one bucket per parameter
    options.find_unused_parameters = find_unused;
    Reducer reducer(model.named_parameters(), recording, options);
    const int64_t buckets = int64_t(reducer.bucket_layout().size());
    for (int step = 0; step < 2; ++step) {  // the second step: past the one-time rebuild
      recording->log().clear();
      reducer.prepare_for_backward();
      mse(model.forward(x), y).backward();
      reducer.finish();
    }
    const std::vector<std::string> log = recording->log();
    INFO("log of " << log.size() << " entries");
    // One all-reduce per bucket, plus the usage counts only when unused parameters are allowed.
    CHECK(recording->count("all_reduce") == buckets + (find_unused ? 1 : 0));
    CHECK(recording->count("synchronize") == (find_unused ? 1 : 0));
    CHECK(int64_t(log.size()) == recording->count("all_reduce") + recording->count("synchronize"));
  }
}

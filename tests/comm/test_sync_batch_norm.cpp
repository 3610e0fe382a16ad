// SyncBatchNorm through DDP: R ranks with batch b each must train exactly as one process with
// plain BatchNorm on the R*b rows (float64, 1e-12), weights and running statistics alike;
// every rank recomputes that single-process truth itself from the same seeded data.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <memory>

#include "comm/ddp.h"
#include "comm/sync_batch_norm.h"
#include "engine/ops.h"
#include "engine/optim/sgd.h"
#include "engine/random.h"
#include "models/layers/batch_norm.h"
#include "models/layers/linear.h"
#include "tests/comm/comm_group.h"

using namespace sonata;
using sonata::testing::comm_group;

namespace {

// Linear(6, 4) - BatchNorm(4) with its fused ReLU - Linear(4, 3), float64. x is [N, 6, L]:
// the linear layers act on the last dim moved in front of it, so BatchNorm sees [N, 4, L].
class BnNet : public Module {
 public:
  BnNet() {
    manual_seed(17);
    fc1_ = register_module("fc1", std::make_shared<Linear>(6, 4));
    bn_ = register_module("bn", std::make_shared<BatchNorm>(4));
    fc2_ = register_module("fc2", std::make_shared<Linear>(4, 3));
    to(DType::f64);
  }
  Tensor forward(const Tensor& x) override {
    const Tensor h = fc1_->forward(x.transpose(1, 2)).transpose(1, 2);  // [N, 4, L]
    return fc2_->forward(bn_->forward_relu(h).transpose(1, 2));         // [N, L, 3]
  }

 private:
  std::shared_ptr<Linear> fc1_, fc2_;
  std::shared_ptr<BatchNorm> bn_;
};

double relative_difference(const NamedTensors& a, const NamedTensors& b) {
  double error = 0, scale = 0;
  for (size_t k = 0; k < a.size(); ++k) {
    const std::vector<double> x = a[k].second.to_vector<double>();
    const std::vector<double> y = b[k].second.to_vector<double>();
    for (size_t i = 0; i < x.size(); ++i) {
      error = std::max(error, std::abs(x[i] - y[i]));
      scale = std::max(scale, std::abs(y[i]));
    }
  }
  return error / scale;
}

}  // namespace

TEST_CASE("DDP with SyncBatchNorm over R ranks equals one process with BatchNorm on R*b rows",
          "[comm][sync_batch_norm]") {
  ProcessGroup& group = comm_group();
  const int64_t W = group.world_size(), r = group.rank();
  const int64_t batch = 2, length = 3, steps = 3, global = W * batch;
  Generator generator(77);
  const TensorOptions f64 = TensorOptions{}.with(DType::f64);
  // Channel means far from zero, where a sum-of-squares variance would lose digits.
  const Tensor x = randn({steps * global, 6, length}, f64, &generator) * 3.0 + 20.0;
  const Tensor y = randn({steps * global, length, 3}, f64, &generator);

  auto model = std::make_shared<BnNet>();
  std::shared_ptr<ProcessGroup> shared(&group, [](ProcessGroup*) {});
  CHECK(set_batch_norm_stats_reducer(*model, make_batch_norm_stats_reducer(shared)) == 1);
  DistributedDataParallel ddp(model, shared);
  SgdOptions options;
  options.lr = 0.05;
  options.momentum = 0.9;
  SGD optimizer(model->parameters(), options);

  BnNet reference;
  SGD reference_optimizer(reference.parameters(), options);
  for (int64_t step = 0; step < steps; ++step) {
    const int64_t first = step * global + r * batch;
    mean(pow(ddp.forward(x.slice(0, first, first + batch)) - y.slice(0, first, first + batch), 2.0))
        .backward();
    ddp.finish();
    optimizer.step();

    reference_optimizer.zero_grad();
    const int64_t begin = step * global, end = begin + global;
    mean(pow(reference.forward(x.slice(0, begin, end)) - y.slice(0, begin, end), 2.0)).backward();
    reference_optimizer.step();
  }
  const double weights =
      relative_difference(model->named_parameters(), reference.named_parameters());
  const double buffers = relative_difference(model->named_buffers(), reference.named_buffers());
  INFO("world " << W << ": weights differ by " << weights << ", buffers by " << buffers);
  CHECK(weights <= 1e-12);
  CHECK(buffers <= 1e-12);
  CHECK(relative_difference(model->named_parameters(), BnNet().named_parameters()) > 1e-3);
}

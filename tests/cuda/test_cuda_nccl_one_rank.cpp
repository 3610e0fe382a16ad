// The one-rank NCCL group (comm/bootstrap.h init_one_rank_nccl_group): made without MPI, as on
// the lent GPU machine, its collectives give back their input and DDP's reducer over it gives
// the gradients of a plain backward, bit for bit (an average over one rank is that rank's).
// Runs on a card and on the emulator's NCCL.
#include <catch2/catch.hpp>

#if SONATA_WITH_NCCL
#include <memory>
#include <vector>

#include "base/error.h"
#include "comm/bootstrap.h"
#include "comm/ddp.h"
#include "engine/ops.h"
#include "engine/random.h"
#include "models/layers/linear.h"

using namespace sonata;

namespace {

// Linear(12, 16) - ReLU - Linear(16, 3) on the device, initialised from `seed`.
class TwoLayers : public Module {
 public:
  TwoLayers(uint64_t seed, Device device) {
    manual_seed(seed);
    fc1_ = register_module("fc1", std::make_shared<Linear>(12, 16));
    fc2_ = register_module("fc2", std::make_shared<Linear>(16, 3));
    to(device);
  }
  Tensor forward(const Tensor& x) override { return fc2_->forward(relu(fc1_->forward(x))); }

 private:
  std::shared_ptr<Linear> fc1_, fc2_;
};

std::vector<std::vector<float>> gradients(const Module& model) {
  std::vector<std::vector<float>> out;
  for (const Tensor& p : model.parameters()) out.push_back(p.grad().to_vector<float>());
  return out;
}

}  // namespace

TEST_CASE("a one-rank NCCL group made without MPI gives back what it reduces", "[cuda][nccl]") {
  const Device device = Device::cuda(0);
  const std::shared_ptr<ProcessGroup> group = init_one_rank_nccl_group(device);
  CHECK(group->backend() == "nccl");
  CHECK(group->world_size() == 1);
  CHECK(group->rank() == 0);
  CHECK(group->device() == device);

  Generator generator(7);
  const Tensor values = randn({257}, TensorOptions{}.with(DType::f32), &generator).to(device);
  const std::vector<float> expected = values.to_vector<float>();
  for (ReduceOp op : {ReduceOp::sum, ReduceOp::avg}) {
    Tensor t = values.clone();
    group->all_reduce(t, op)->wait();
    CHECK(t.to_vector<float>() == expected);
  }
  Tensor broadcast = values.clone();
  group->broadcast(broadcast, 0)->wait();
  CHECK(broadcast.to_vector<float>() == expected);
  Tensor gathered = zeros({257}, values.options());
  group->all_gather(values, gathered)->wait();
  CHECK(gathered.to_vector<float>() == expected);
  group->barrier()->synchronize();
}

TEST_CASE("DDP over a one-rank NCCL group gives a plain backward's gradients", "[cuda][nccl]") {
  const Device device = Device::cuda(0);
  Generator generator(11);
  const Tensor x = randn({9, 12}, TensorOptions{}.with(DType::f32), &generator).to(device);
  const Tensor y = randn({9, 3}, TensorOptions{}.with(DType::f32), &generator).to(device);
  auto loss_of = [&](const Tensor& prediction) { return mean(pow(prediction - y, 2.0)); };

  TwoLayers reference(3, device);
  loss_of(reference.forward(x)).backward();

  auto model = std::make_shared<TwoLayers>(3, device);
  DdpOptions options;
  options.reducer.bucket_cap_bytes = 256;  // several buckets, the first ready during backward
  options.reducer.first_bucket_cap_bytes = 256;
  DistributedDataParallel ddp(model, init_one_rank_nccl_group(device), options);
  loss_of(ddp.forward(x)).backward();
  ddp.finish();
  CHECK(ddp.reducer().bucket_layout().size() > 1);
  CHECK(gradients(*model) == gradients(reference));
}

TEST_CASE("a one-rank NCCL group is refused on the CPU, naming the device", "[cuda][nccl]") {
  CHECK_THROWS_WITH(init_one_rank_nccl_group(Device::cpu()),
                    Catch::Contains("needs a CUDA device, not cpu"));
}
#endif

// A narrow vgg19_bn run channels-last end to end on CUDA against the CPU reference (which
// computes in NCHW). The per-op channels-last parity tests sit beside their NCHW ones in
// test_cuda_conv.cpp and test_cuda_batch_norm.cpp.
#include <catch2/catch.hpp>

#include <map>
#include <string>

#include "engine/ops.h"
#include "engine/random.h"
#include "models/registry.h"
#include "tests/support/tensor_compare.h"

using namespace sonata;
using namespace sonata::testing;

TEST_CASE("a channels-last vgg19_bn on CUDA matches the CPU in f32", "[cuda][layout][vgg]") {
  ModelConfig config(std::map<std::string, std::string>{
      {"num-classes", "5"}, {"width", "0.0625"}, {"dropout", "0"}, {"channels-last", "true"}});
  manual_seed(11);
  auto cpu_model = make_model("vgg19_bn", config);
  manual_seed(11);
  auto cuda_model = make_model("vgg19_bn", config);
  cuda_model->to(Device::cuda());
  const Tensor x = randn({2, 3, 64, 64}), projection = randn({2, 5});
  const Tensor y_cpu = cpu_model->forward(x);
  const Tensor y_cuda = cuda_model->forward(x.to(Device::cuda()));
  CHECK(relative_error(y_cuda.to(Device::cpu()), y_cpu) < 1e-4);
  sum(mul(y_cpu, projection)).backward();
  sum(mul(y_cuda, projection.to(Device::cuda()))).backward();
  const auto cpu_params = cpu_model->named_parameters();
  const auto cuda_params = cuda_model->named_parameters();
  double worst = 0;
  for (size_t i = 0; i < cpu_params.size(); ++i) {
    const Tensor theirs = cpu_params[i].second.grad();
    if (max_abs(theirs) < 1e-6) continue;  // conv biases before BN: zero up to rounding
    INFO(cpu_params[i].first);
    worst = std::max(worst, relative_error(cuda_params[i].second.grad().to(Device::cpu()), theirs));
  }
  CHECK(worst < 1e-3);
}

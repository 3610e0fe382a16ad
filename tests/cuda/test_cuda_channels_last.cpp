// Channels-last (NHWC) on CUDA against the CPU reference (which computes in NCHW): cuDNN's
// NHWC convolutions, batch_norm over N*H*W rows of C channels, and a narrow vgg19_bn run
// channels-last end to end, in f32, f16 and bf16.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "engine/ops/batch_norm.h"
#include "engine/ops/conv.h"
#include "engine/ops/memory_format.h"
#include "engine/random.h"
#include "models/registry.h"
#include "tests/cuda/parity_util.h"
#include "tests/support/tensor_compare.h"

using namespace sonata;
using namespace sonata::testing;

namespace {

struct ConvCase {
  std::string name;
  Shape x, weight;
  Conv2dParams params;
  bool bias;
};

std::vector<ConvCase> conv_cases() {
  return {
      {"VGG 3x3 padding 1", {2, 16, 12, 12}, {16, 16, 3, 3}, {{1, 1}, {1, 1}, {1, 1}}, true},
      {"VGG first layer, 3 channels", {2, 3, 16, 16}, {8, 3, 3, 3}, {{1, 1}, {1, 1}, {1, 1}}, true},
      {"3x3 stride 2 padding 1", {2, 4, 9, 8}, {8, 4, 3, 3}, {{2, 2}, {1, 1}, {1, 1}}, true},
      {"dilation 2", {1, 4, 9, 10}, {4, 4, 3, 2}, {{1, 1}, {2, 1}, {2, 2}}, true},
      {"DeepSpeech2 21x11", {1, 8, 11, 30}, {8, 8, 21, 11}, {{2, 1}, {10, 5}, {1, 1}}, true},
      {"1x1 without bias", {2, 8, 5, 5}, {16, 8, 1, 1}, {}, false},
  };
}

}  // namespace

TEST_CASE("conv2d on channels-last input matches the CPU", "[cuda][conv][layout]") {
  uint64_t seed = 1900;
  for (const ConvCase& c : conv_cases()) {
    INFO(c.name);
    std::vector<Tensor> inputs{parity_input(c.x, ++seed),
                               parity_input(c.weight, ++seed, -0.25, 0.25)};
    if (c.bias) inputs.push_back(parity_input({c.weight[0]}, ++seed));
    const Conv2dParams params = c.params;
    require_parity(
        [&](const std::vector<Tensor>& in) {
          const Tensor y =
              conv2d(to_channels_last(in[0]), in[1], in.size() > 2 ? in[2] : Tensor(), params);
          REQUIRE(is_channels_last(y));  // on both devices: the layout flows on
          return y;
        },
        inputs);
  }
}

TEST_CASE("batch_norm on channels-last input matches the CPU", "[cuda][batch_norm][layout]") {
  const std::vector<Shape> shapes = {{4, 3, 5, 7}, {8, 16, 8, 8}, {16, 32, 16, 16}};
  uint64_t seed = 2000;
  for (const Shape& shape : shapes) {
    const int64_t c = shape[1];
    const Tensor x = parity_input(shape, ++seed, -1, 3);
    const Tensor w = parity_input({c}, ++seed, 0.5, 1.5), b = parity_input({c}, ++seed);
    const Tensor rm = parity_input({c}, ++seed, -0.5, 0.5, false);
    const Tensor rv = parity_input({c}, ++seed, 0.5, 2, false);
    for (bool training : {true, false}) {
      INFO("shape " << shape_str(shape) << " training " << training);
      const BatchNormOptions options{training, 0.1, 1e-5};
      require_parity(
          [&](const std::vector<Tensor>& in) {
            const Tensor y =
                batch_norm_relu(to_channels_last(in[0]), in[1], in[2], in[3], in[4], options);
            REQUIRE(is_channels_last(y));
            return cat({y.to(DType::f32).flatten(), in[3].to(DType::f32), in[4].to(DType::f32)}, 0);
          },
          {x, w, b, rm, rv});
    }
  }
}

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

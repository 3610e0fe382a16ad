// The convolution kernels: a 3x3 convolution as VGG's blocks run it (no bias: the
// BatchNorm after it makes one redundant) and the fused BatchNorm + ReLU that follows it.
#include <vector>

#include "base/error.h"
#include "bench/kernel_bench.h"
#include "engine/ops/batch_norm.h"
#include "engine/ops/conv.h"

namespace sonata::bench {

std::vector<KernelResult> bench_conv(const KernelBenchOptions& options) {
  // N, C, H, W, K, R (= S), stride, padding: a 3x3 convolution, 64 -> 64 channels on 8 maps
  // of 32x32 on the CPU, 128 -> 128 channels on 64 maps of 56x56 on CUDA.
  const std::vector<int64_t> size =
      kernel_sizes(options, "conv", 8, {8, 64, 32, 32, 64, 3, 1, 1},
                   {64, 128, 56, 56, 128, 3, 1, 1}, {2, 4, 8, 8, 4, 3, 1, 1});
  const ConvShape shape{size[0], size[1], size[2], size[3], size[4],
                        size[5], size[5], size[6], size[7]};
  SONATA_CHECK(shape.p() > 0 && shape.q() > 0, "bench_kernels: conv --shape ",
               shape_text({"N", "C", "H", "W", "K", "R", "stride", "pad"}, size),
               " leaves no output");
  const int64_t element = int64_t(dtype_size(options.dtype));
  Conv2dParams params;
  params.stride = {shape.stride, shape.stride};
  params.padding = {shape.padding, shape.padding};
  struct Set {
    Tensor x, w;
  };
  std::vector<Set> sets;
  return time_kernel(
      options, "conv",
      shape_text({"N", "C", "H", "W", "K", "R", "S", "stride", "pad"},
                 {shape.n, shape.c, shape.h, shape.w, shape.k, shape.r, shape.s, shape.stride,
                  shape.padding}),
      conv2d_cost(shape, element, Pass::forward), conv2d_cost(shape, element, Pass::backward),
      [&](int) {
        sets.push_back({random_input(options, {shape.n, shape.c, shape.h, shape.w}, true),
                        random_input(options, {shape.k, shape.c, shape.r, shape.s}, true)});
      },
      [&](int i) { conv2d(sets[size_t(i)].x, sets[size_t(i)].w, Tensor(), params); },
      [&](int i) {
        const Set& set = sets[size_t(i)];
        return Graph{{set.x, set.w},
                     conv2d(set.x, set.w, Tensor(), params),
                     random_input(options, {shape.n, shape.k, shape.p(), shape.q()})};
      });
}

std::vector<KernelResult> bench_bn_relu(const KernelBenchOptions& options) {
  // N, C, H, W: 8 x 64 channels of 64x64 on the CPU (8 MiB in f32), 64 x 128 channels of
  // 56x56 on CUDA.
  const std::vector<int64_t> size =
      kernel_sizes(options, "bn_relu", 4, {8, 64, 64, 64}, {64, 128, 56, 56}, {2, 4, 8, 8});
  const int64_t channels = size[1], elements = size[0] * size[1] * size[2] * size[3];
  const int64_t element = int64_t(dtype_size(options.dtype));
  // Training mode, momentum 0.1, eps 1e-5; weight, bias and running statistics in f32, as
  // the models keep them under every precision.
  const BatchNormOptions training;
  const TensorOptions f32 = TensorOptions{}.with(DType::f32).with(options.device);
  struct Set {
    Tensor x, weight, bias, running_mean, running_var;
  };
  std::vector<Set> sets;
  const auto forward = [&](const Set& set) {
    return batch_norm_relu(set.x, set.weight, set.bias, set.running_mean, set.running_var,
                           training);
  };
  return time_kernel(
      options, "bn_relu", shape_text({"N", "C", "H", "W"}, size),
      batch_norm_relu_cost(elements, channels, element, Pass::forward),
      batch_norm_relu_cost(elements, channels, element, Pass::backward),
      [&](int) {
        sets.push_back({random_input(options, size, true), ones({channels}, f32.grad()),
                        zeros({channels}, f32.grad()), zeros({channels}, f32),
                        ones({channels}, f32)});
      },
      [&](int i) { forward(sets[size_t(i)]); },
      [&](int i) {
        const Set& set = sets[size_t(i)];
        return Graph{{set.x, set.weight, set.bias}, forward(set), random_input(options, size)};
      });
}

}  // namespace sonata::bench

#include "bench/layer_passes.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <vector>

#include "base/error.h"
#include "engine/autograd/grad_mode.h"
#include "engine/ops.h"
#include "engine/random.h"
#include "kernels/cpu/capability.h"
#include "kernels/cpu/conv.h"
#include "models/layers/conv2d.h"
#include "models/layers/linear.h"

namespace sonata::bench {
namespace {

using kernels::Conv2dShape;
using kernels::ConvPass;
namespace cpu = kernels::cpu;

// The best seconds of one call: one untimed call, then at least 3 calls and 0.2 s (one call
// when quick). The best, as the peak's: on a shared machine it is the call least disturbed.
double best_seconds(const std::function<void()>& call, bool quick) {
  call();
  double best = 1e30, total = 0;
  for (int calls = 0; calls < (quick ? 1 : 3) || (!quick && total < 0.2); ++calls) {
    const auto start = std::chrono::steady_clock::now();
    call();
    const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
    best = std::min(best, elapsed.count());
    total += elapsed.count();
  }
  return best;
}

void print_pass(const LayerPassOptions& options, const std::string& layer, const char* op,
                const char* pass, const std::string& shape, const char* algorithm,
                double multiply_adds, double seconds) {
  const double gfma = multiply_adds / seconds / 1e9;
  std::printf(
      "{\"work\": \"%s\", \"layer\": \"%s\", \"op\": \"%s\", \"pass\": \"%s\", \"shape\": "
      "\"%s\", \"algorithm\": \"%s\", \"multiply_adds\": %.0f, \"ms\": %.4g, \"gfma_per_s\": "
      "%.4g",
      options.work.c_str(), layer.c_str(), op, pass, shape.c_str(), algorithm, multiply_adds,
      seconds * 1e3, gfma);
  if (options.peak_gfma > 0)
    std::printf(", \"fma_peak_gfma\": %.4g, \"peak_share\": %.3g", options.peak_gfma,
                gfma / options.peak_gfma);
  std::printf(
      ", \"device\": \"cpu\", \"threads\": %d, \"cpu_capability\": \"%s\", \"peer\": "
      "\"sonata\"}\n",
      omp_get_max_threads(), cpu::capability_name());
  std::fflush(stdout);
}

const char* algorithm_name(const Conv2dShape& shape, ConvPass pass) {
  return cpu::conv2d_algorithm(shape, pass) == cpu::CpuConvAlgorithm::direct ? "direct"
                                                                             : "im2col_gemm";
}

Conv2dShape conv_shape(const Tensor& x, Conv2d& conv) {
  const Shape& in = x.shape();
  const Shape& weight = conv.weight().shape();
  const Conv2dParams& p = conv.params();
  Conv2dShape s;
  s.n = in[0], s.c_in = in[1], s.h = in[2], s.w = in[3];
  s.c_out = weight[0], s.kh = weight[2], s.kw = weight[3];
  s.stride_h = p.stride[0], s.stride_w = p.stride[1];
  s.pad_h = p.padding[0], s.pad_w = p.padding[1];
  s.dil_h = p.dilation[0], s.dil_w = p.dilation[1];
  s.h_out = (s.h + 2 * s.pad_h - s.dil_h * (s.kh - 1) - 1) / s.stride_h + 1;
  s.w_out = (s.w + 2 * s.pad_w - s.dil_w * (s.kw - 1) - 1) / s.stride_w + 1;
  return s;
}

// Each pass through the CPU kernels, as engine/ops/conv.cpp calls them (NCHW, f32, the
// automatic algorithm), on random tensors of the step's shapes.
void time_conv(const LayerPassOptions& options, const std::string& layer, const Conv2dShape& s,
               const Tensor& w, bool input_gradient) {
  const TensorOptions f32 = TensorOptions{}.with(DType::f32);
  const Tensor x = randn({s.n, s.c_in, s.h, s.w}, f32);
  const Tensor gy = randn({s.n, s.c_out, s.h_out, s.w_out}, f32);
  const Tensor y = empty(gy.shape(), f32), gx = empty(x.shape(), f32), gw = empty(w.shape(), f32);
  const std::string shape =
      str("N=", s.n, ",C=", s.c_in, ",H=", s.h, ",W=", s.w, ",K=", s.c_out, ",R=", s.kh,
          ",S=", s.kw, ",stride=", s.stride_h, "x", s.stride_w, ",pad=", s.pad_h, "x", s.pad_w);
  const double multiply_adds = double(s.n * s.c_out * s.h_out * s.w_out) * double(s.patch());
  auto workspace = [&](ConvPass pass) {
    return empty({std::max<int64_t>(1, int64_t(cpu::conv2d_workspace_bytes(DType::f32, s, pass)))},
                 TensorOptions{}.with(DType::u8));
  };
  const Tensor forward_space = workspace(ConvPass::forward);
  print_pass(
      options, layer, "conv", "forward", shape, algorithm_name(s, ConvPass::forward), multiply_adds,
      best_seconds(
          [&] {
            cpu::conv2d_forward(DType::f32, s, x.data_ptr(), w.data_ptr(), nullptr, y.data_ptr(),
                                forward_space.data_ptr(), size_t(forward_space.numel()));
          },
          options.quick));
  if (input_gradient) {
    const Tensor space = workspace(ConvPass::backward_input);
    print_pass(options, layer, "conv", "input_grad", shape,
               algorithm_name(s, ConvPass::backward_input), multiply_adds,
               best_seconds(
                   [&] {
                     cpu::conv2d_backward_input(DType::f32, s, gy.data_ptr(), w.data_ptr(),
                                                gx.data_ptr(), space.data_ptr(),
                                                size_t(space.numel()));
                   },
                   options.quick));
  }
  const Tensor weight_space = workspace(ConvPass::backward_weight);
  print_pass(options, layer, "conv", "weight_grad", shape,
             algorithm_name(s, ConvPass::backward_weight), multiply_adds,
             best_seconds(
                 [&] {
                   cpu::conv2d_backward_weight(DType::f32, s, gy.data_ptr(), x.data_ptr(),
                                               gw.data_ptr(), nullptr, weight_space.data_ptr(),
                                               size_t(weight_space.numel()));
                 },
                 options.quick));
}

// The three products of y = x W^T over `rows` rows, through the engine's matmul. `w` is the
// model's own (VGG's first classifier weight is 400 MB: drawing another took seconds).
void time_linear(const LayerPassOptions& options, const std::string& layer, int64_t rows,
                 const Tensor& w, bool input_gradient) {
  const int64_t out = w.shape()[0], in = w.shape()[1];
  const TensorOptions f32 = TensorOptions{}.with(DType::f32);
  const Tensor x = randn({rows, in}, f32), gy = randn({rows, out}, f32);
  const std::string shape = str("M=", rows, ",N=", out, ",K=", in);
  const double multiply_adds = double(rows) * double(in) * double(out);
  print_pass(options, layer, "linear", "forward", shape, "matmul", multiply_adds,
             best_seconds([&] { matmul(x, w.t()); }, options.quick));
  if (input_gradient)
    print_pass(options, layer, "linear", "input_grad", shape, "matmul", multiply_adds,
               best_seconds([&] { matmul(gy, w); }, options.quick));
  print_pass(options, layer, "linear", "weight_grad", shape, "matmul", multiply_adds,
             best_seconds([&] { matmul(gy.t(), x); }, options.quick));
}

// An RNN's products per frame and sample: every input and recurrent weight once
// (PyTorch's names: weight_ih_l0, weight_hh_l0_reverse, ...).
double rnn_multiply_adds_per_row(const ModelLayer& layer) {
  double total = 0;
  for (const auto& [prefix, module] : layer.modules)
    for (const auto& [name, parameter] : module->named_parameters())
      if (name.find("weight_ih") != std::string::npos ||
          name.find("weight_hh") != std::string::npos)
        total += double(parameter.numel());
  return total;
}

}  // namespace

double step_multiply_adds(const LayerSequence& layers, const LayerValue& input,
                          const LayerPassOptions& options) {
  NoGradGuard no_grad;
  double total = 0;
  bool first = true;  // the model's input needs no gradient
  LayerValue value = input;
  for (const ModelLayer& layer : layers) {
    const Tensor& x = value.x;
    for (const auto& [prefix, module] : layer.modules) {
      if (auto* conv = dynamic_cast<Conv2d*>(module.get())) {
        const Conv2dShape s = conv_shape(x, *conv);
        total += double(s.n * s.c_out * s.h_out * s.w_out) * double(s.patch()) * (first ? 2 : 3);
        if (options.time_passes) time_conv(options, prefix, s, conv->weight(), !first);
        first = false;
      } else if (auto* linear = dynamic_cast<Linear*>(module.get())) {
        const int64_t rows = x.numel() / linear->in_features();
        total += double(rows) * double(linear->in_features()) * double(linear->out_features()) *
                 (first ? 2 : 3);
        if (options.time_passes) time_linear(options, prefix, rows, linear->weight(), !first);
        first = false;
      }
    }
    // [T', N, features]: every frame of every sample goes through each RNN weight.
    const double rnn = rnn_multiply_adds_per_row(layer);
    if (rnn > 0) {
      SONATA_CHECK(x.dim() == 3, "bench: RNN layer ", layer.name, " got input ",
                   shape_str(x.shape()), ", expected [T, N, features]");
      total += rnn * double(x.shape()[0] * x.shape()[1]) * (first ? 2 : 3);
      first = false;
    }
    value = layer.forward(value);
  }
  return total;
}

}  // namespace sonata::bench

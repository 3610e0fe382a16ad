// conv2d against an independent direct convolution written here in plain loops, float64
// gradient checks of x, weight and bias over the shapes VGG19_BN and DeepSpeech2 use, the
// kernels' batch chunking, and the error messages.
#include <catch2/catch.hpp>

#include <algorithm>
#include <vector>

#include "engine/ops/conv.h"
#include "kernels/cpu/conv.h"
#include "tests/cases/conv_cases.h"
#include "tests/ops/op_test_util.h"

using namespace sonata;
using namespace sonata::testing;

namespace {

// The direct definition: y[n, o, i, j] = b[o] + sum_{c, p, q} x[n, c, i*s - pad + p*d, ...]
// * w[o, c, p, q], padding reading as zero.
std::vector<double> direct_conv2d(const std::vector<double>& x, const Shape& xs,
                                  const std::vector<double>& w, const Shape& ws,
                                  const std::vector<double>& b, const Conv2dParams& p,
                                  Shape& out_shape) {
  const int64_t n = xs[0], c_in = xs[1], h = xs[2], wd = xs[3];
  const int64_t c_out = ws[0], kh = ws[2], kw = ws[3];
  const int64_t h_out = (h + 2 * p.padding[0] - p.dilation[0] * (kh - 1) - 1) / p.stride[0] + 1;
  const int64_t w_out = (wd + 2 * p.padding[1] - p.dilation[1] * (kw - 1) - 1) / p.stride[1] + 1;
  out_shape = {n, c_out, h_out, w_out};
  std::vector<double> y(size_t(n * c_out * h_out * w_out));
  for (int64_t b0 = 0; b0 < n; ++b0)
    for (int64_t o = 0; o < c_out; ++o)
      for (int64_t i = 0; i < h_out; ++i)
        for (int64_t j = 0; j < w_out; ++j) {
          double total = b.empty() ? 0.0 : b[size_t(o)];
          for (int64_t c = 0; c < c_in; ++c)
            for (int64_t q = 0; q < kh; ++q)
              for (int64_t r = 0; r < kw; ++r) {
                const int64_t ih = i * p.stride[0] - p.padding[0] + q * p.dilation[0];
                const int64_t iw = j * p.stride[1] - p.padding[1] + r * p.dilation[1];
                if (ih < 0 || ih >= h || iw < 0 || iw >= wd) continue;
                total += x[size_t(flat_index(xs, {b0, c, ih, iw}))] *
                         w[size_t(flat_index(ws, {o, c, q, r}))];
              }
          y[size_t(flat_index(out_shape, {b0, o, i, j}))] = total;
        }
  return y;
}

}  // namespace

TEST_CASE("conv2d equals the direct convolution", "[ops][conv]") {
  uint64_t seed = 700;
  for (const ConvCase& c : conv_cases()) {
    INFO(c.name);
    const Tensor x = grad_input(c.x, ++seed).detach();
    // The large cases sum up to 1848 products per output: with |w| <= 1, f32's rounding of
    // such sums exceeds the f32 bound below, so they draw small weights, as the CUDA parity
    // test does for the same reason.
    const double w_bound = c.large ? 0.25 : 1.0;
    const Tensor w = grad_input(c.weight, ++seed, -w_bound, w_bound).detach();
    const Tensor b = c.bias ? grad_input({c.weight[0]}, ++seed).detach() : Tensor();
    Shape expected_shape;
    const std::vector<double> expected =
        direct_conv2d(values_of(x), c.x, values_of(w), c.weight,
                      c.bias ? values_of(b) : std::vector<double>{}, c.params, expected_shape);
    const Tensor y = conv2d(x, w, b, c.params);
    REQUIRE(y.shape() == expected_shape);
    const std::vector<double> got = values_of(y);
    const Tensor y32 =
        conv2d(x.to(DType::f32), w.to(DType::f32), c.bias ? b.to(DType::f32) : Tensor(), c.params);
    const std::vector<double> got32 = values_of(y32);
    for (size_t i = 0; i < expected.size(); ++i) {
      CHECK(got[i] == Approx(expected[i]).epsilon(1e-12).margin(1e-12));
      CHECK(got32[i] == Approx(expected[i]).epsilon(1e-5).margin(1e-5));
    }
  }
}

TEST_CASE("conv2d gradients of input, weight and bias", "[ops][conv][grad]") {
  uint64_t seed = 720;
  for (const ConvCase& c : conv_cases()) {
    if (c.large) continue;
    INFO(c.name);
    std::vector<Tensor> inputs{grad_input(c.x, ++seed), grad_input(c.weight, ++seed)};
    if (c.bias) inputs.push_back(grad_input({c.weight[0]}, ++seed));
    const Conv2dParams params = c.params;
    require_gradients(
        [&](const std::vector<Tensor>& in) {
          return conv2d(in[0], in[1], in.size() > 2 ? in[2] : Tensor(), params);
        },
        inputs);
  }
}

TEST_CASE("conv2d gradients when only some inputs require them", "[ops][conv][grad]") {
  const Tensor x = grad_input({2, 2, 5, 5}, 740);
  const Tensor w = grad_input({3, 2, 3, 3}, 741);
  const Tensor b = grad_input({3}, 742);
  const Conv2dParams params{{2, 2}, {1, 1}, {1, 1}};
  // Bias alone (the weight frozen), then the input alone (the first layer's case reversed).
  require_gradients(
      [&](const std::vector<Tensor>& in) { return conv2d(x.detach(), w.detach(), in[0], params); },
      {b});
  require_gradients(
      [&](const std::vector<Tensor>& in) { return conv2d(in[0], w.detach(), Tensor(), params); },
      {x});
  Tensor frozen_x = x.detach();
  Tensor weight = w.detach().set_requires_grad(true);
  conv2d(frozen_x, weight, Tensor(), params).backward(ones({2, 3, 3, 3}, f64_options()));
  CHECK(weight.grad().defined());
}

TEST_CASE("conv2d of non-contiguous inputs and an empty batch", "[ops][conv][grad]") {
  const Tensor x = grad_input({5, 3, 2, 4}, 750);  // used as [3, 5, 4, 2] via permute
  const Tensor w = grad_input({2, 5, 2, 2}, 751);
  require_gradients(
      [](const std::vector<Tensor>& in) {
        return conv2d(in[0].permute({1, 0, 3, 2}), in[1]);
      },
      {x, w});

  Tensor empty_x = zeros({0, 2, 4, 4}, f64_options().grad());
  Tensor weight = grad_input({3, 2, 3, 3}, 752);
  Tensor bias = grad_input({3}, 753);
  const Tensor y = conv2d(empty_x, weight, bias);
  CHECK(y.shape() == Shape{0, 3, 2, 2});
  sum(y).backward();
  CHECK(values_of(weight.grad()) == std::vector<double>(54, 0.0));
  CHECK(values_of(bias.grad()) == std::vector<double>(3, 0.0));
}

namespace {

using kernels::ConvPass;
using kernels::cpu::CpuConvAlgorithm;

kernels::Conv2dShape kernel_shape(const Shape& x, const Shape& w, const Conv2dParams& p) {
  kernels::Conv2dShape s;
  s.n = x[0], s.c_in = x[1], s.h = x[2], s.w = x[3], s.c_out = w[0], s.kh = w[2], s.kw = w[3];
  s.stride_h = p.stride[0], s.stride_w = p.stride[1], s.pad_h = p.padding[0],
  s.pad_w = p.padding[1], s.dil_h = p.dilation[0], s.dil_w = p.dilation[1];
  s.h_out = (s.h + 2 * s.pad_h - s.dil_h * (s.kh - 1) - 1) / s.stride_h + 1;
  s.w_out = (s.w + 2 * s.pad_w - s.dil_w * (s.kw - 1) - 1) / s.stride_w + 1;
  return s;
}

// y, grad_x, grad_weight and grad_bias of one CPU algorithm, each pass in a workspace of
// `images` images (0: as large as the kernels ask for), concatenated.
std::vector<double> all_passes(DType dtype, const kernels::Conv2dShape& s, const Tensor& x,
                               const Tensor& w, const Tensor& b, const Tensor& gy,
                               CpuConvAlgorithm algorithm, int64_t images = 0) {
  const auto workspace_of = [&](ConvPass pass) {
    size_t bytes = kernels::cpu::conv2d_workspace_bytes(dtype, s, pass, algorithm);
    if (images > 0) {
      // Shrink to `images` images' worth: the whole-batch size less (n - images) per-image
      // parts, found from the workspace of a batch one image smaller.
      kernels::Conv2dShape fewer = s;
      fewer.n = s.n - 1;
      const size_t per_image =
          bytes - kernels::cpu::conv2d_workspace_bytes(dtype, fewer, pass, algorithm);
      bytes -= per_image * size_t(s.n - images);
    }
    return std::vector<char>(bytes);
  };
  const TensorOptions options = TensorOptions{}.with(dtype);
  const Tensor xc = x.to(dtype), wc = w.to(dtype), bc = b.to(dtype), gyc = gy.to(dtype);
  Tensor y = empty(gy.shape(), options), gx = empty(x.shape(), options);
  Tensor gw = empty(w.shape(), options), gb = empty({s.c_out}, options);
  std::vector<char> ws = workspace_of(ConvPass::forward);
  kernels::cpu::conv2d_forward(dtype, s, xc.data_ptr(), wc.data_ptr(), bc.data_ptr(), y.data_ptr(),
                               ws.data(), ws.size(), algorithm);
  ws = workspace_of(ConvPass::backward_input);
  kernels::cpu::conv2d_backward_input(dtype, s, gyc.data_ptr(), wc.data_ptr(), gx.data_ptr(),
                                      ws.data(), ws.size(), algorithm);
  ws = workspace_of(ConvPass::backward_weight);
  kernels::cpu::conv2d_backward_weight(dtype, s, gyc.data_ptr(), xc.data_ptr(), gw.data_ptr(),
                                       gb.data_ptr(), ws.data(), ws.size(), algorithm);
  std::vector<double> all;
  for (const Tensor& t : {y, gx, gw, gb})
    for (double v : values_of(t)) all.push_back(v);
  return all;
}

}  // namespace

TEST_CASE("conv2d's two CPU algorithms agree on every pass", "[ops][conv]") {
  // The op-level checks above go through the automatic choice (direct for at most 16 lane
  // channels); here every case runs both algorithms, so each is checked on every shape.
  uint64_t seed = 770;
  for (const ConvCase& c : conv_cases()) {
    INFO(c.name);
    const kernels::Conv2dShape s = kernel_shape(c.x, c.weight, c.params);
    const double w_bound = c.large ? 0.25 : 1.0;
    const Tensor x = grad_input(c.x, ++seed).detach();
    const Tensor w = grad_input(c.weight, ++seed, -w_bound, w_bound).detach();
    const Tensor b = grad_input({s.c_out}, ++seed).detach();
    const Tensor gy = grad_input({s.n, s.c_out, s.h_out, s.w_out}, ++seed).detach();
    for (DType dtype : {DType::f64, DType::f32}) {
      INFO(dtype_name(dtype));
      // f32's rounding grows with the longest sum: the weight gradient's runs over every
      // output pixel of the batch (2 116 in the largest case), accumulated one term at a time
      // in the direct kernels and in panels in the GEMM. n terms of magnitude at most 1 (the
      // inputs are drawn from [-1, 1]) round to within about n * 2^-24 of each other.
      const double longest_sum =
          double(std::max({s.patch(), s.c_out * s.kh * s.kw, s.n * s.h_out * s.w_out}));
      const double tolerance = dtype == DType::f64 ? 1e-12 : std::max(2e-5, longest_sum * 0x1p-24);
      const std::vector<double> gemm =
          all_passes(dtype, s, x, w, b, gy, CpuConvAlgorithm::im2col_gemm);
      const std::vector<double> direct =
          all_passes(dtype, s, x, w, b, gy, CpuConvAlgorithm::direct);
      REQUIRE(gemm.size() == direct.size());
      for (size_t i = 0; i < gemm.size(); ++i)
        CHECK(direct[i] == Approx(gemm[i]).epsilon(tolerance).margin(tolerance));
    }
  }
}

TEST_CASE("conv2d's automatic CPU algorithm follows the lanes and the filter width",
          "[ops][conv]") {
  using kernels::cpu::conv2d_algorithm;
  const kernels::Conv2dShape ds2 =
      kernel_shape({16, 32, 80, 40}, {32, 32, 11, 21}, {{1, 2}, {5, 10}, {1, 1}});
  CHECK(conv2d_algorithm(ds2, ConvPass::forward) == CpuConvAlgorithm::direct);
  CHECK(conv2d_algorithm(ds2, ConvPass::backward_input) == CpuConvAlgorithm::direct);
  CHECK(conv2d_algorithm(ds2, ConvPass::backward_weight) == CpuConvAlgorithm::direct);
  const kernels::Conv2dShape vgg =
      kernel_shape({8, 3, 64, 64}, {64, 3, 3, 3}, {{1, 1}, {1, 1}, {1, 1}});
  CHECK(conv2d_algorithm(vgg, ConvPass::forward) == CpuConvAlgorithm::direct);
  // The weight gradient's register rows are the filter's 3 columns; the input gradient's
  // lanes are its 3 input channels.
  CHECK(conv2d_algorithm(vgg, ConvPass::backward_weight) == CpuConvAlgorithm::im2col_gemm);
  CHECK(conv2d_algorithm(vgg, ConvPass::backward_input) == CpuConvAlgorithm::im2col_gemm);
  // Deeper, 64 input channels fill the weight gradient's rows and the input gradient's lanes.
  const kernels::Conv2dShape vgg_deeper =
      kernel_shape({8, 64, 64, 64}, {64, 64, 3, 3}, {{1, 1}, {1, 1}, {1, 1}});
  CHECK(conv2d_algorithm(vgg_deeper, ConvPass::backward_weight) == CpuConvAlgorithm::direct);
  CHECK(conv2d_algorithm(vgg_deeper, ConvPass::backward_input) == CpuConvAlgorithm::direct);
  kernels::Conv2dShape channels_last = ds2;
  channels_last.channels_last = true;
  CHECK(conv2d_algorithm(channels_last, ConvPass::forward) == CpuConvAlgorithm::im2col_gemm);
}

TEST_CASE("conv2d kernels give the same result in one chunk and in many", "[ops][conv]") {
  // The engine sizes the workspace for the whole batch here; a one-image workspace makes the
  // kernels loop over chunks, accumulating the weight and bias gradients across them.
  const Shape x_shape{3, 2, 6, 5}, w_shape{4, 2, 3, 2};
  const Conv2dParams params{{2, 1}, {1, 1}, {1, 2}};
  const kernels::Conv2dShape s = kernel_shape(x_shape, w_shape, params);
  const Tensor x = grad_input(x_shape, 760).detach();
  const Tensor w = grad_input(w_shape, 761).detach();
  const Tensor b = grad_input({s.c_out}, 763).detach();
  const Tensor gy = grad_input({s.n, s.c_out, s.h_out, s.w_out}, 762).detach();
  for (CpuConvAlgorithm algorithm : {CpuConvAlgorithm::im2col_gemm, CpuConvAlgorithm::direct}) {
    INFO(int(algorithm));
    const std::vector<double> whole = all_passes(DType::f64, s, x, w, b, gy, algorithm);
    for (int64_t images : {1, 2}) {
      const std::vector<double> chunked = all_passes(DType::f64, s, x, w, b, gy, algorithm, images);
      REQUIRE(chunked.size() == whole.size());
      for (size_t i = 0; i < whole.size(); ++i)
        CHECK(chunked[i] == Approx(whole[i]).epsilon(1e-13).margin(1e-13));
    }
  }
}

TEST_CASE("conv2d names the bad input", "[ops][conv][errors]") {
  const Tensor x = zeros({1, 3, 8, 8}, f64_options());
  const Tensor w = zeros({4, 3, 3, 3}, f64_options());
  CHECK_THROWS_WITH(conv2d(x, zeros({4, 2, 3, 3}, f64_options())),
                    Catch::Contains("input has 3 channels") && Catch::Contains("expects 2"));
  CHECK_THROWS_WITH(conv2d(x, zeros({4, 3, 11, 3}, f64_options())),
                    Catch::Contains("larger than the padded input 8x8"));
  CHECK_NOTHROW(conv2d(x, zeros({4, 3, 10, 3}, f64_options()), Tensor(), {{1, 1}, {1, 0}, {1, 1}}));
  CHECK_THROWS_WITH(conv2d(x, w.to(DType::f32)),
                    Catch::Contains("input is f64") && Catch::Contains("parameter is f32"));
  CHECK_THROWS_WITH(conv2d(x, w, zeros({3}, f64_options())),
                    Catch::Contains("bias [3] does not match the 4 output channels"));
  CHECK_THROWS_WITH(conv2d(zeros({3, 8, 8}, f64_options()), w),
                    Catch::Contains("input must be 4-D"));
  CHECK_THROWS_WITH(conv2d(x, w, Tensor(), {{0, 1}, {0, 0}, {1, 1}}),
                    Catch::Contains("stride (0, 1) must be positive"));
  CHECK_THROWS_WITH(conv2d(x.to(DType::i64), w.to(DType::i64)), Catch::Contains("floating-point"));
}

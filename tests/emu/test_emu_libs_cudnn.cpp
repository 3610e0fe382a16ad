// The emulated cuDNN against direct convolution loops written here (gathering for every
// pass, where the emulator scatters), in NCHW and NHWC, with padding, stride and dilation.
#include <cudnn.h>

#include <catch2/catch.hpp>
#include <cmath>

#include "emu/libs/counters.h"
#include "tests/emu/test_emu_libs_support.h"

namespace {

using sonata::emu::test::DeviceBuffer;
using sonata::emu::test::TestStream;

struct Shape {
  int n = 2, c = 3, h = 7, w = 6, k = 4, r = 3, s = 2;
  int pad_h = 1, pad_w = 2, u = 2, v = 1, dil_h = 2, dil_w = 1;
  int ho() const { return (h + 2 * pad_h - (dil_h * (r - 1) + 1)) / u + 1; }
  int wo() const { return (w + 2 * pad_w - (dil_w * (s - 1) + 1)) / v + 1; }
};

// Logical NCHW index (and KCRS for filters).
size_t at(int a, int b, int c, int d, int B, int C, int D) {
  return size_t(((a * B + b) * C + c) * D + d);
}

// y[n,k,oh,ow] = sum_{c,r,s} x[n,c,oh*u-pad+r*dil,...] w[k,c,r,s]
std::vector<double> ref_forward(const Shape& p, const std::vector<double>& x,
                                const std::vector<double>& w) {
  std::vector<double> y(size_t(p.n * p.k * p.ho() * p.wo()), 0.0);
  for (int n = 0; n < p.n; ++n)
    for (int k = 0; k < p.k; ++k)
      for (int oh = 0; oh < p.ho(); ++oh)
        for (int ow = 0; ow < p.wo(); ++ow) {
          double sum = 0;
          for (int c = 0; c < p.c; ++c)
            for (int r = 0; r < p.r; ++r)
              for (int s = 0; s < p.s; ++s) {
                const int ih = oh * p.u - p.pad_h + r * p.dil_h;
                const int iw = ow * p.v - p.pad_w + s * p.dil_w;
                if (ih < 0 || ih >= p.h || iw < 0 || iw >= p.w) continue;
                sum += x[at(n, c, ih, iw, p.c, p.h, p.w)] * w[at(k, c, r, s, p.c, p.r, p.s)];
              }
          y[at(n, k, oh, ow, p.k, p.ho(), p.wo())] = sum;
        }
  return y;
}

// dx[n,c,ih,iw] = sum over taps that read (ih, iw): solve oh from ih for each r.
std::vector<double> ref_backward_data(const Shape& p, const std::vector<double>& dy,
                                      const std::vector<double>& w) {
  std::vector<double> dx(size_t(p.n * p.c * p.h * p.w), 0.0);
  for (int n = 0; n < p.n; ++n)
    for (int c = 0; c < p.c; ++c)
      for (int ih = 0; ih < p.h; ++ih)
        for (int iw = 0; iw < p.w; ++iw) {
          double sum = 0;
          for (int k = 0; k < p.k; ++k)
            for (int r = 0; r < p.r; ++r)
              for (int s = 0; s < p.s; ++s) {
                const int th = ih + p.pad_h - r * p.dil_h, tw = iw + p.pad_w - s * p.dil_w;
                if (th < 0 || tw < 0 || th % p.u || tw % p.v) continue;
                const int oh = th / p.u, ow = tw / p.v;
                if (oh >= p.ho() || ow >= p.wo()) continue;
                sum += dy[at(n, k, oh, ow, p.k, p.ho(), p.wo())] * w[at(k, c, r, s, p.c, p.r, p.s)];
              }
          dx[at(n, c, ih, iw, p.c, p.h, p.w)] = sum;
        }
  return dx;
}

std::vector<double> ref_backward_filter(const Shape& p, const std::vector<double>& x,
                                        const std::vector<double>& dy) {
  std::vector<double> dw(size_t(p.k * p.c * p.r * p.s), 0.0);
  for (int k = 0; k < p.k; ++k)
    for (int c = 0; c < p.c; ++c)
      for (int r = 0; r < p.r; ++r)
        for (int s = 0; s < p.s; ++s) {
          double sum = 0;
          for (int n = 0; n < p.n; ++n)
            for (int oh = 0; oh < p.ho(); ++oh)
              for (int ow = 0; ow < p.wo(); ++ow) {
                const int ih = oh * p.u - p.pad_h + r * p.dil_h;
                const int iw = ow * p.v - p.pad_w + s * p.dil_w;
                if (ih < 0 || ih >= p.h || iw < 0 || iw >= p.w) continue;
                sum +=
                    x[at(n, c, ih, iw, p.c, p.h, p.w)] * dy[at(n, k, oh, ow, p.k, p.ho(), p.wo())];
              }
          dw[at(k, c, r, s, p.c, p.r, p.s)] = sum;
        }
  return dw;
}

// NCHW-ordered values to NHWC order (and back), for a [A, B, C, D] logical tensor.
std::vector<double> to_nhwc(const std::vector<double>& v, int A, int B, int C, int D) {
  std::vector<double> out(v.size());
  for (int a = 0; a < A; ++a)
    for (int b = 0; b < B; ++b)
      for (int c = 0; c < C; ++c)
        for (int d = 0; d < D; ++d)
          out[size_t(((a * C + c) * D + d) * B + b)] = v[at(a, b, c, d, B, C, D)];
  return out;
}
std::vector<double> from_nhwc(const std::vector<double>& v, int A, int B, int C, int D) {
  std::vector<double> out(v.size());
  for (int a = 0; a < A; ++a)
    for (int b = 0; b < B; ++b)
      for (int c = 0; c < C; ++c)
        for (int d = 0; d < D; ++d)
          out[at(a, b, c, d, B, C, D)] = v[size_t(((a * C + c) * D + d) * B + b)];
  return out;
}

struct Descriptors {
  cudnnHandle_t handle = nullptr;
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  Descriptors(const Shape& p, cudnnTensorFormat_t format, cudnnDataType_t type,
              cudnnDataType_t compute, cudnnMathType_t math, cudaStream_t stream) {
    REQUIRE(cudnnCreate(&handle) == CUDNN_STATUS_SUCCESS);
    REQUIRE(cudnnSetStream(handle, stream) == CUDNN_STATUS_SUCCESS);
    REQUIRE(cudnnCreateTensorDescriptor(&x) == CUDNN_STATUS_SUCCESS);
    REQUIRE(cudnnCreateTensorDescriptor(&y) == CUDNN_STATUS_SUCCESS);
    REQUIRE(cudnnCreateFilterDescriptor(&w) == CUDNN_STATUS_SUCCESS);
    REQUIRE(cudnnCreateConvolutionDescriptor(&conv) == CUDNN_STATUS_SUCCESS);
    REQUIRE(cudnnSetTensor4dDescriptor(x, format, type, p.n, p.c, p.h, p.w) ==
            CUDNN_STATUS_SUCCESS);
    REQUIRE(cudnnSetTensor4dDescriptor(y, format, type, p.n, p.k, p.ho(), p.wo()) ==
            CUDNN_STATUS_SUCCESS);
    REQUIRE(cudnnSetFilter4dDescriptor(w, type, format, p.k, p.c, p.r, p.s) ==
            CUDNN_STATUS_SUCCESS);
    REQUIRE(cudnnSetConvolution2dDescriptor(conv, p.pad_h, p.pad_w, p.u, p.v, p.dil_h, p.dil_w,
                                            CUDNN_CROSS_CORRELATION,
                                            compute) == CUDNN_STATUS_SUCCESS);
    REQUIRE(cudnnSetConvolutionMathType(conv, math) == CUDNN_STATUS_SUCCESS);
  }
  ~Descriptors() {
    cudnnDestroyTensorDescriptor(x);
    cudnnDestroyTensorDescriptor(y);
    cudnnDestroyFilterDescriptor(w);
    cudnnDestroyConvolutionDescriptor(conv);
    cudnnDestroy(handle);
  }
};

}  // namespace

TEST_CASE("emulated cuDNN convolution passes match direct loops in NCHW and NHWC (f64)",
          "[emu][cudnn]") {
  TestStream stream;
  const Shape p;
  for (const bool nhwc : {false, true}) {
    INFO((nhwc ? "NHWC" : "NCHW"));
    Descriptors d(p, nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW, CUDNN_DATA_DOUBLE,
                  CUDNN_DATA_DOUBLE, CUDNN_DEFAULT_MATH, stream.get());
    int n = 0, c = 0, h = 0, w = 0;
    REQUIRE(cudnnGetConvolution2dForwardOutputDim(d.conv, d.x, d.w, &n, &c, &h, &w) ==
            CUDNN_STATUS_SUCCESS);
    CHECK((n == p.n && c == p.k && h == p.ho() && w == p.wo()));
    const auto x = sonata::emu::test::random_doubles(size_t(p.n * p.c * p.h * p.w), 31);
    const auto wt = sonata::emu::test::random_doubles(size_t(p.k * p.c * p.r * p.s), 32);
    const auto dy = sonata::emu::test::random_doubles(size_t(p.n * p.k * p.ho() * p.wo()), 33);
    auto layout = [&](const std::vector<double>& v, int A, int B, int C, int D) {
      return nhwc ? to_nhwc(v, A, B, C, D) : v;
    };
    auto unlayout = [&](const std::vector<double>& v, int A, int B, int C, int D) {
      return nhwc ? from_nhwc(v, A, B, C, D) : v;
    };
    DeviceBuffer dx_in(x.size() * 8), dw_in(wt.size() * 8), ddy(dy.size() * 8);
    DeviceBuffer dyo(dy.size() * 8), dxo(x.size() * 8), dwo(wt.size() * 8);
    dx_in.upload(layout(x, p.n, p.c, p.h, p.w));
    dw_in.upload(layout(wt, p.k, p.c, p.r, p.s));
    ddy.upload(layout(dy, p.n, p.k, p.ho(), p.wo()));
    const double one = 1.0, zero = 0.0;
    REQUIRE(cudnnConvolutionForward(d.handle, &one, d.x, dx_in.get(), d.w, dw_in.get(), d.conv,
                                    CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, nullptr, 0, &zero,
                                    d.y, dyo.get()) == CUDNN_STATUS_SUCCESS);
    REQUIRE(cudnnConvolutionBackwardData(d.handle, &one, d.w, dw_in.get(), d.y, ddy.get(), d.conv,
                                         CUDNN_CONVOLUTION_BWD_DATA_ALGO_0, nullptr, 0, &zero, d.x,
                                         dxo.get()) == CUDNN_STATUS_SUCCESS);
    REQUIRE(cudnnConvolutionBackwardFilter(d.handle, &one, d.x, dx_in.get(), d.y, ddy.get(), d.conv,
                                           CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0, nullptr, 0, &zero,
                                           d.w, dwo.get()) == CUDNN_STATUS_SUCCESS);
    REQUIRE(cudaStreamSynchronize(stream.get()) == cudaSuccess);
    const auto y_want = ref_forward(p, x, wt);
    const auto y_got = unlayout(dyo.download<double>(y_want.size()), p.n, p.k, p.ho(), p.wo());
    for (size_t i = 0; i < y_want.size(); ++i) CHECK(y_got[i] == Approx(y_want[i]).margin(1e-12));
    const auto dx_want = ref_backward_data(p, dy, wt);
    const auto dx_got = unlayout(dxo.download<double>(dx_want.size()), p.n, p.c, p.h, p.w);
    for (size_t i = 0; i < dx_want.size(); ++i)
      CHECK(dx_got[i] == Approx(dx_want[i]).margin(1e-12));
    const auto dw_want = ref_backward_filter(p, x, dy);
    const auto dw_got = unlayout(dwo.download<double>(dw_want.size()), p.k, p.c, p.r, p.s);
    for (size_t i = 0; i < dw_want.size(); ++i)
      CHECK(dw_got[i] == Approx(dw_want[i]).margin(1e-12));
  }
}

TEST_CASE("emulated cuDNN rounds fp32 to TF32 unless the math type is FMA", "[emu][cudnn]") {
  TestStream stream;
  Shape p;
  p.n = 1, p.c = 1, p.h = 1, p.w = 1, p.k = 1, p.r = 1, p.s = 1;
  p.pad_h = p.pad_w = 0, p.u = p.v = 1, p.dil_h = p.dil_w = 1;
  const std::vector<float> x = {1.0f + std::ldexp(1.0f, -12)}, w = {1.0f};
  DeviceBuffer dx(4), dw(4), dy(4);
  dx.upload(x), dw.upload(w);
  const float one = 1.0f, zero = 0.0f;
  for (const cudnnMathType_t math : {CUDNN_DEFAULT_MATH, CUDNN_FMA_MATH}) {
    Descriptors d(p, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, CUDNN_DATA_FLOAT, math, stream.get());
    REQUIRE(cudnnConvolutionForward(d.handle, &one, d.x, dx.get(), d.w, dw.get(), d.conv,
                                    CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, nullptr, 0, &zero,
                                    d.y, dy.get()) == CUDNN_STATUS_SUCCESS);
    REQUIRE(cudaStreamSynchronize(stream.get()) == cudaSuccess);
    CHECK(dy.download<float>(1)[0] == (math == CUDNN_FMA_MATH ? x[0] : 1.0f));
  }
}

TEST_CASE("emulated cudnnFind blocks and counts and ranks runnable algorithms first",
          "[emu][cudnn]") {
  TestStream stream;
  const Shape p;
  Descriptors d(p, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, CUDNN_DATA_FLOAT, CUDNN_DEFAULT_MATH,
                stream.get());
  DeviceBuffer x(size_t(p.n * p.c * p.h * p.w) * 4), w(size_t(p.k * p.c * p.r * p.s) * 4),
      y(size_t(p.n * p.k * p.ho() * p.wo()) * 4), workspace(1 << 16);
  x.upload(std::vector<float>(x.bytes() / 4, 0.5f));
  w.upload(std::vector<float>(w.bytes() / 4, 0.25f));
  const int64_t before = sonata::emu::cudnn_find_calls();
  cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
  int returned = 0;
  REQUIRE(cudnnFindConvolutionForwardAlgorithmEx(d.handle, d.x, x.get(), d.w, w.get(), d.conv, d.y,
                                                 y.get(), CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
                                                 &returned, perf, workspace.get(),
                                                 workspace.bytes()) == CUDNN_STATUS_SUCCESS);
  CHECK(sonata::emu::cudnn_find_calls() == before + 1);
  REQUIRE(returned == CUDNN_CONVOLUTION_FWD_ALGO_COUNT);
  CHECK(perf[0].status == CUDNN_STATUS_SUCCESS);
  bool failed_seen = false;
  for (int i = 0; i < returned; ++i) {
    if (perf[i].status != CUDNN_STATUS_SUCCESS) failed_seen = true;
    if (failed_seen) CHECK(perf[i].status != CUDNN_STATUS_SUCCESS);
    if (perf[i].status == CUDNN_STATUS_SUCCESS) CHECK(perf[i].memory <= workspace.bytes());
  }
  // The search wrote its output (the timing runs do): y holds the convolution now.
  double total = 0;
  for (const float v : y.download<float>(y.bytes() / 4)) total += v;
  CHECK(total > 0.0);
  cudnnConvolutionFwdAlgoPerf_t guessed[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
  REQUIRE(cudnnGetConvolutionForwardAlgorithm_v7(d.handle, d.x, d.w, d.conv, d.y,
                                                 CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned,
                                                 guessed) == CUDNN_STATUS_SUCCESS);
  CHECK(sonata::emu::cudnn_find_calls() == before + 1);  // heuristics are not a search
}

// Planted defect: a pass given less workspace than its algorithm needs is refused; its twin
// with the size cudnnGet*WorkspaceSize reported runs.
TEST_CASE("emulated cuDNN refuses a workspace smaller than the algorithm needs", "[emu][cudnn]") {
  TestStream stream;
  const Shape p;
  Descriptors d(p, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, CUDNN_DATA_FLOAT, CUDNN_DEFAULT_MATH,
                stream.get());
  size_t needed = 0;
  REQUIRE(cudnnGetConvolutionForwardWorkspaceSize(d.handle, d.x, d.w, d.conv, d.y,
                                                  CUDNN_CONVOLUTION_FWD_ALGO_GEMM,
                                                  &needed) == CUDNN_STATUS_SUCCESS);
  REQUIRE(needed > 0);
  DeviceBuffer x(size_t(p.n * p.c * p.h * p.w) * 4), w(size_t(p.k * p.c * p.r * p.s) * 4),
      y(size_t(p.n * p.k * p.ho() * p.wo()) * 4), workspace(needed);
  x.upload(std::vector<float>(x.bytes() / 4, 1.0f));
  w.upload(std::vector<float>(w.bytes() / 4, 1.0f));
  const float one = 1.0f, zero = 0.0f;
  CHECK(cudnnConvolutionForward(d.handle, &one, d.x, x.get(), d.w, w.get(), d.conv,
                                CUDNN_CONVOLUTION_FWD_ALGO_GEMM, workspace.get(), needed - 1, &zero,
                                d.y, y.get()) == CUDNN_STATUS_BAD_PARAM);
  CHECK(cudnnConvolutionForward(d.handle, &one, d.x, x.get(), d.w, w.get(), d.conv,
                                CUDNN_CONVOLUTION_FWD_ALGO_GEMM, workspace.get(), needed, &zero,
                                d.y, y.get()) == CUDNN_STATUS_SUCCESS);
  CHECK(cudaStreamSynchronize(stream.get()) == cudaSuccess);
}

TEST_CASE("emulated cuDNN refuses a stream of another device than its handle's", "[emu][cudnn]") {
  REQUIRE(cudaSetDevice(0) == cudaSuccess);
  cudnnHandle_t handle = nullptr;
  REQUIRE(cudnnCreate(&handle) == CUDNN_STATUS_SUCCESS);
  {
    TestStream own;
    CHECK(cudnnSetStream(handle, own.get()) == CUDNN_STATUS_SUCCESS);
  }
  REQUIRE(cudaSetDevice(1) == cudaSuccess);
  {
    TestStream other;
    CHECK(cudnnSetStream(handle, other.get()) == CUDNN_STATUS_BAD_PARAM_STREAM_MISMATCH);
    CHECK(sonata::emu::last_library_message().find("device 1") != std::string::npos);
  }
  REQUIRE(cudaSetDevice(0) == cudaSuccess);
  cudnnDestroy(handle);
}

TEST_CASE("emulated cudnnConvolutionBackwardBias sums dy per channel", "[emu][cudnn]") {
  TestStream stream;
  cudnnHandle_t handle = nullptr;
  REQUIRE(cudnnCreate(&handle) == CUDNN_STATUS_SUCCESS);
  REQUIRE(cudnnSetStream(handle, stream.get()) == CUDNN_STATUS_SUCCESS);
  cudnnTensorDescriptor_t dyd = nullptr, dbd = nullptr;
  cudnnCreateTensorDescriptor(&dyd);
  cudnnCreateTensorDescriptor(&dbd);
  REQUIRE(cudnnSetTensor4dDescriptor(dyd, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, 2, 3, 2, 2) ==
          CUDNN_STATUS_SUCCESS);
  REQUIRE(cudnnSetTensor4dDescriptor(dbd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 3, 1, 1) ==
          CUDNN_STATUS_SUCCESS);
  const auto dy = sonata::emu::test::random_floats(24, 41);
  DeviceBuffer ddy(24 * 4), ddb(3 * 4);
  ddy.upload(dy);
  const float one = 1.0f, zero = 0.0f;
  REQUIRE(cudnnConvolutionBackwardBias(handle, &one, dyd, ddy.get(), &zero, dbd, ddb.get()) ==
          CUDNN_STATUS_SUCCESS);
  REQUIRE(cudaStreamSynchronize(stream.get()) == cudaSuccess);
  const auto db = ddb.download<float>(3);
  for (int c = 0; c < 3; ++c) {
    double sum = 0;
    for (int i = 0; i < 8; ++i) sum += dy[size_t(i * 3 + c)];  // NHWC: channel fastest
    CHECK(db[size_t(c)] == Approx(sum).margin(1e-5));
  }
  cudnnDestroyTensorDescriptor(dyd);
  cudnnDestroyTensorDescriptor(dbd);
  cudnnDestroy(handle);
}

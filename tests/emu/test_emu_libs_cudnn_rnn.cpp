// The emulated cuDNN RNN API: one LSTM and one GRU step against cuDNN's documented equations
// written out here (gate order from linLayerID, both bias vectors), and its boundary checks,
// each a planted defect next to its correct twin: a workspace or reserve space smaller than
// asked, an unpacked layout without CUDNN_RNN_PADDED_IO_ENABLED, a state descriptor of the
// wrong shape; and the packed layout against the padded one. (The layers end to end against
// the CPU and PyTorch: tests/cuda/test_cuda_rnn_fused.cpp.)
#include <cudnn.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "tests/emu/test_emu_libs_support.h"

namespace {

using sonata::emu::test::DeviceBuffer;
using sonata::emu::test::TestStream;

constexpr int kInput = 3, kHidden = 2, kBatch = 2, kSteps = 1;

double sigmoid(double v) {
  return 1 / (1 + std::exp(-v));
}

// One layer, one direction, f64, [T=1, N=2] padded; sample 1 has length 0.
struct Rnn {
  cudnnHandle_t handle = nullptr;
  cudnnRNNDescriptor_t rnn = nullptr;
  cudnnRNNDataDescriptor_t x = nullptr, y = nullptr;
  cudnnTensorDescriptor_t h = nullptr;
  int lengths[kBatch] = {1, 0};
  size_t weight_bytes = 0, workspace_bytes = 0, reserve_bytes = 0;

  Rnn(cudnnRNNMode_t mode, cudaStream_t stream, uint32_t aux = CUDNN_RNN_PADDED_IO_ENABLED) {
    REQUIRE(cudnnCreate(&handle) == CUDNN_STATUS_SUCCESS);
    REQUIRE(cudnnSetStream(handle, stream) == CUDNN_STATUS_SUCCESS);
    REQUIRE(cudnnCreateRNNDescriptor(&rnn) == CUDNN_STATUS_SUCCESS);
    REQUIRE(cudnnSetRNNDescriptor_v8(rnn, CUDNN_RNN_ALGO_STANDARD, mode, CUDNN_RNN_DOUBLE_BIAS,
                                     CUDNN_UNIDIRECTIONAL, CUDNN_LINEAR_INPUT, CUDNN_DATA_DOUBLE,
                                     CUDNN_DATA_DOUBLE, CUDNN_DEFAULT_MATH, kInput, kHidden,
                                     kHidden, 1, nullptr, aux) == CUDNN_STATUS_SUCCESS);
    double zero = 0;
    REQUIRE(cudnnCreateRNNDataDescriptor(&x) == CUDNN_STATUS_SUCCESS);
    REQUIRE(cudnnCreateRNNDataDescriptor(&y) == CUDNN_STATUS_SUCCESS);
    REQUIRE(cudnnSetRNNDataDescriptor(x, CUDNN_DATA_DOUBLE,
                                      CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_UNPACKED, kSteps, kBatch,
                                      kInput, lengths, &zero) == CUDNN_STATUS_SUCCESS);
    REQUIRE(cudnnSetRNNDataDescriptor(y, CUDNN_DATA_DOUBLE,
                                      CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_UNPACKED, kSteps, kBatch,
                                      kHidden, lengths, &zero) == CUDNN_STATUS_SUCCESS);
    REQUIRE(cudnnCreateTensorDescriptor(&h) == CUDNN_STATUS_SUCCESS);
    const int dims[3] = {1, kBatch, kHidden}, strides[3] = {kBatch * kHidden, kHidden, 1};
    REQUIRE(cudnnSetTensorNdDescriptor(h, CUDNN_DATA_DOUBLE, 3, dims, strides) ==
            CUDNN_STATUS_SUCCESS);
    REQUIRE(cudnnGetRNNWeightSpaceSize(handle, rnn, &weight_bytes) == CUDNN_STATUS_SUCCESS);
    REQUIRE(cudnnGetRNNTempSpaceSizes(handle, rnn, CUDNN_FWD_MODE_TRAINING, x, &workspace_bytes,
                                      &reserve_bytes) == CUDNN_STATUS_SUCCESS);
  }
  ~Rnn() {
    cudnnDestroyTensorDescriptor(h);
    cudnnDestroyRNNDataDescriptor(x);
    cudnnDestroyRNNDataDescriptor(y);
    cudnnDestroyRNNDescriptor(rnn);
    cudnnDestroy(handle);
  }
  // Element offsets of linLayerID's matrix and bias in a weight space at `base`.
  void where(const void* base, int id, size_t* matrix, size_t* bias) const {
    void* m = nullptr;
    void* b = nullptr;
    REQUIRE(cudnnGetRNNWeightParams(handle, rnn, 0, weight_bytes, base, id, nullptr, &m, nullptr,
                                    &b) == CUDNN_STATUS_SUCCESS);
    *matrix = size_t(static_cast<char*>(m) - static_cast<const char*>(base)) / sizeof(double);
    *bias = size_t(static_cast<char*>(b) - static_cast<const char*>(base)) / sizeof(double);
  }
};

// Runs one training forward with seeded weights, x and hx (and cx); returns y and hy (cy)
// with the weights as linLayerID-indexed matrices W[id][row][col] and biases B[id][row].
struct StepResult {
  std::vector<double> weights, x, hx, cx, y, hy, cy;
  std::vector<std::vector<double>> matrix, bias;  // per linLayerID, row-major
};

StepResult run_step(cudnnRNNMode_t mode) {
  TestStream stream;
  Rnn r(mode, stream.get());
  const int gates = mode == CUDNN_LSTM ? 4 : 3;
  StepResult s;
  s.weights = sonata::emu::test::random_doubles(r.weight_bytes / sizeof(double), 3);
  s.x = sonata::emu::test::random_doubles(kBatch * kInput, 4);
  s.hx = sonata::emu::test::random_doubles(kBatch * kHidden, 5);
  s.cx = sonata::emu::test::random_doubles(kBatch * kHidden, 6);
  DeviceBuffer w(r.weight_bytes), x(s.x.size() * 8), y(size_t(kBatch * kHidden) * 8),
      hx(s.hx.size() * 8), cx(s.cx.size() * 8), hy(s.hx.size() * 8), cy(s.cx.size() * 8),
      lengths(sizeof(r.lengths)), workspace(r.workspace_bytes), reserve(r.reserve_bytes);
  w.upload(s.weights);
  x.upload(s.x);
  hx.upload(s.hx);
  cx.upload(s.cx);
  lengths.upload(std::vector<int32_t>(r.lengths, r.lengths + kBatch));
  for (int id = 0; id < 2 * gates; ++id) {
    size_t m = 0, b = 0;
    r.where(w.get(), id, &m, &b);
    const size_t cols = id < gates ? kInput : kHidden;
    s.matrix.emplace_back(s.weights.begin() + long(m),
                          s.weights.begin() + long(m + kHidden * cols));
    s.bias.emplace_back(s.weights.begin() + long(b), s.weights.begin() + long(b + kHidden));
  }
  const bool lstm = mode == CUDNN_LSTM;
  REQUIRE(cudnnRNNForward(r.handle, r.rnn, CUDNN_FWD_MODE_TRAINING, lengths.as<int32_t>(), r.x,
                          x.get(), r.y, y.get(), r.h, hx.get(), hy.get(), lstm ? r.h : nullptr,
                          lstm ? cx.get() : nullptr, lstm ? cy.get() : nullptr, r.weight_bytes,
                          w.get(), r.workspace_bytes, workspace.get(), r.reserve_bytes,
                          reserve.get()) == CUDNN_STATUS_SUCCESS);
  s.y = y.download<double>(size_t(kBatch * kHidden));
  s.hy = hy.download<double>(s.hx.size());
  if (lstm) s.cy = cy.download<double>(s.cx.size());
  return s;
}

// W_id x + b_W,id + R_id h + b_R,id for sample 0, unit j (recurrent id = id + gates).
double pre(const StepResult& s, int gates, int id, int j) {
  double v = s.bias[size_t(id)][size_t(j)] + s.bias[size_t(id + gates)][size_t(j)];
  for (int k = 0; k < kInput; ++k)
    v += s.matrix[size_t(id)][size_t(j * kInput + k)] * s.x[size_t(k)];
  for (int k = 0; k < kHidden; ++k)
    v += s.matrix[size_t(id + gates)][size_t(j * kHidden + k)] * s.hx[size_t(k)];
  return v;
}

}  // namespace

TEST_CASE("emulated cuDNN LSTM step follows cuDNN's equations and linLayerID order",
          "[emu][cudnn][rnn]") {
  const StepResult s = run_step(CUDNN_LSTM);
  for (int j = 0; j < kHidden; ++j) {
    const double i = sigmoid(pre(s, 4, 0, j)), f = sigmoid(pre(s, 4, 1, j));
    const double g = std::tanh(pre(s, 4, 2, j)), o = sigmoid(pre(s, 4, 3, j));
    const double c = f * s.cx[size_t(j)] + i * g, h = o * std::tanh(c);
    CHECK(s.cy[size_t(j)] == Approx(c).epsilon(1e-12));
    CHECK(s.hy[size_t(j)] == Approx(h).epsilon(1e-12));
    CHECK(s.y[size_t(j)] == Approx(h).epsilon(1e-12));
    // Sample 1 has length 0: its final states are its initial ones, its frame paddingFill.
    CHECK(s.hy[size_t(kHidden + j)] == s.hx[size_t(kHidden + j)]);
    CHECK(s.cy[size_t(kHidden + j)] == s.cx[size_t(kHidden + j)]);
    CHECK(s.y[size_t(kHidden + j)] == 0.0);
  }
}

TEST_CASE("emulated cuDNN GRU step follows cuDNN's equations and linLayerID order",
          "[emu][cudnn][rnn]") {
  const StepResult s = run_step(CUDNN_GRU);
  for (int j = 0; j < kHidden; ++j) {
    const double r = sigmoid(pre(s, 3, 0, j)), u = sigmoid(pre(s, 3, 1, j));
    double wx = s.bias[2][size_t(j)], rh = s.bias[5][size_t(j)];
    for (int k = 0; k < kInput; ++k) wx += s.matrix[2][size_t(j * kInput + k)] * s.x[size_t(k)];
    for (int k = 0; k < kHidden; ++k) rh += s.matrix[5][size_t(j * kHidden + k)] * s.hx[size_t(k)];
    const double n = std::tanh(wx + r * rh), h = (1 - u) * n + u * s.hx[size_t(j)];
    CHECK(s.hy[size_t(j)] == Approx(h).epsilon(1e-12));
    CHECK(s.y[size_t(j)] == Approx(h).epsilon(1e-12));
  }
}

// Planted defects, each next to its correct twin.
TEST_CASE("emulated cuDNN RNN refuses short spaces, unpadded IO and a wrong state shape",
          "[emu][cudnn][rnn]") {
  TestStream stream;
  Rnn r(CUDNN_LSTM, stream.get());
  DeviceBuffer w(r.weight_bytes), x(size_t(kBatch * kInput) * 8), y(size_t(kBatch * kHidden) * 8),
      lengths(sizeof(r.lengths)), workspace(r.workspace_bytes), reserve(r.reserve_bytes);
  w.upload(std::vector<double>(r.weight_bytes / 8, 0.1));
  x.upload(std::vector<double>(size_t(kBatch * kInput), 0.2));
  lengths.upload(std::vector<int32_t>(r.lengths, r.lengths + kBatch));
  auto forward = [&](size_t workspace_bytes, size_t reserve_bytes, cudnnTensorDescriptor_t h) {
    return cudnnRNNForward(r.handle, r.rnn, CUDNN_FWD_MODE_TRAINING, lengths.as<int32_t>(), r.x,
                           x.get(), r.y, y.get(), h, nullptr, nullptr, h, nullptr, nullptr,
                           r.weight_bytes, w.get(), workspace_bytes, workspace.get(), reserve_bytes,
                           reserve.get());
  };
  CHECK(forward(r.workspace_bytes - 1, r.reserve_bytes, r.h) == CUDNN_STATUS_BAD_PARAM);
  CHECK(forward(r.workspace_bytes, r.reserve_bytes - 1, r.h) == CUDNN_STATUS_BAD_PARAM);
  cudnnTensorDescriptor_t wrong = nullptr;
  REQUIRE(cudnnCreateTensorDescriptor(&wrong) == CUDNN_STATUS_SUCCESS);
  const int dims[3] = {2, kBatch, kHidden}, strides[3] = {kBatch * kHidden, kHidden, 1};
  REQUIRE(cudnnSetTensorNdDescriptor(wrong, CUDNN_DATA_DOUBLE, 3, dims, strides) ==
          CUDNN_STATUS_SUCCESS);
  CHECK(forward(r.workspace_bytes, r.reserve_bytes, wrong) == CUDNN_STATUS_BAD_PARAM);
  cudnnDestroyTensorDescriptor(wrong);
  CHECK(forward(r.workspace_bytes, r.reserve_bytes, r.h) == CUDNN_STATUS_SUCCESS);
  CHECK(cudaStreamSynchronize(stream.get()) == cudaSuccess);

  Rnn unpadded(CUDNN_LSTM, stream.get(), CUDNN_RNN_PADDED_IO_DISABLED);
  CHECK(cudnnRNNForward(unpadded.handle, unpadded.rnn, CUDNN_FWD_MODE_TRAINING,
                        lengths.as<int32_t>(), unpadded.x, x.get(), unpadded.y, y.get(), unpadded.h,
                        nullptr, nullptr, unpadded.h, nullptr, nullptr, r.weight_bytes, w.get(),
                        r.workspace_bytes, workspace.get(), r.reserve_bytes,
                        reserve.get()) == CUDNN_STATUS_BAD_PARAM);
}

namespace {

// A forward of one LSTM layer over [T=3, N=3] with lengths 3, 2, 1 in `layout`: y as the
// layout stores it, and hy.
struct LayoutRun {
  std::vector<double> y, hy;
};

LayoutRun run_layout(cudnnRNNDataLayout_t layout, const std::vector<double>& x_values) {
  constexpr int steps = 3, batch = 3;
  const int lengths[batch] = {3, 2, 1};
  TestStream stream;
  cudnnHandle_t handle = nullptr;
  cudnnRNNDescriptor_t rnn = nullptr;
  cudnnRNNDataDescriptor_t xd = nullptr, yd = nullptr;
  cudnnTensorDescriptor_t hd = nullptr;
  REQUIRE(cudnnCreate(&handle) == CUDNN_STATUS_SUCCESS);
  REQUIRE(cudnnSetStream(handle, stream.get()) == CUDNN_STATUS_SUCCESS);
  REQUIRE(cudnnCreateRNNDescriptor(&rnn) == CUDNN_STATUS_SUCCESS);
  REQUIRE(cudnnSetRNNDescriptor_v8(
              rnn, CUDNN_RNN_ALGO_STANDARD, CUDNN_LSTM, CUDNN_RNN_DOUBLE_BIAS, CUDNN_UNIDIRECTIONAL,
              CUDNN_LINEAR_INPUT, CUDNN_DATA_DOUBLE, CUDNN_DATA_DOUBLE, CUDNN_DEFAULT_MATH, kInput,
              kHidden, kHidden, 1, nullptr, CUDNN_RNN_PADDED_IO_ENABLED) == CUDNN_STATUS_SUCCESS);
  double zero = 0;
  REQUIRE(cudnnCreateRNNDataDescriptor(&xd) == CUDNN_STATUS_SUCCESS);
  REQUIRE(cudnnCreateRNNDataDescriptor(&yd) == CUDNN_STATUS_SUCCESS);
  REQUIRE(cudnnSetRNNDataDescriptor(xd, CUDNN_DATA_DOUBLE, layout, steps, batch, kInput, lengths,
                                    &zero) == CUDNN_STATUS_SUCCESS);
  REQUIRE(cudnnSetRNNDataDescriptor(yd, CUDNN_DATA_DOUBLE, layout, steps, batch, kHidden, lengths,
                                    &zero) == CUDNN_STATUS_SUCCESS);
  REQUIRE(cudnnCreateTensorDescriptor(&hd) == CUDNN_STATUS_SUCCESS);
  const int dims[3] = {1, batch, kHidden}, strides[3] = {batch * kHidden, kHidden, 1};
  REQUIRE(cudnnSetTensorNdDescriptor(hd, CUDNN_DATA_DOUBLE, 3, dims, strides) ==
          CUDNN_STATUS_SUCCESS);
  size_t weight_bytes = 0, workspace_bytes = 0, reserve_bytes = 0;
  REQUIRE(cudnnGetRNNWeightSpaceSize(handle, rnn, &weight_bytes) == CUDNN_STATUS_SUCCESS);
  REQUIRE(cudnnGetRNNTempSpaceSizes(handle, rnn, CUDNN_FWD_MODE_TRAINING, xd, &workspace_bytes,
                                    &reserve_bytes) == CUDNN_STATUS_SUCCESS);
  const size_t rows = x_values.size() / kInput;
  DeviceBuffer w(weight_bytes), x(x_values.size() * 8), y(rows * kHidden * 8),
      hy(size_t(batch * kHidden) * 8), dev_lengths(sizeof(lengths)), workspace(workspace_bytes),
      reserve(reserve_bytes);
  w.upload(sonata::emu::test::random_doubles(weight_bytes / 8, 7));
  x.upload(x_values);
  dev_lengths.upload(std::vector<int32_t>(lengths, lengths + batch));
  REQUIRE(cudnnRNNForward(handle, rnn, CUDNN_FWD_MODE_TRAINING, dev_lengths.as<int32_t>(), xd,
                          x.get(), yd, y.get(), hd, nullptr, hy.get(), hd, nullptr, nullptr,
                          weight_bytes, w.get(), workspace_bytes, workspace.get(), reserve_bytes,
                          reserve.get()) == CUDNN_STATUS_SUCCESS);
  LayoutRun run{y.download<double>(rows * kHidden), hy.download<double>(size_t(batch * kHidden))};
  cudnnDestroyTensorDescriptor(hd);
  cudnnDestroyRNNDataDescriptor(xd);
  cudnnDestroyRNNDataDescriptor(yd);
  cudnnDestroyRNNDescriptor(rnn);
  cudnnDestroy(handle);
  return run;
}

}  // namespace

// The packed layout holds, step by step, only the samples still running (lengths 3, 2, 1:
// rows (t0: b0 b1 b2) (t1: b0 b1) (t2: b0)); the same values padded give the same results.
TEST_CASE("emulated cuDNN RNN reads and writes the packed layout as the padded one",
          "[emu][cudnn][rnn]") {
  const std::vector<double> padded = sonata::emu::test::random_doubles(size_t(3 * 3 * kInput), 9);
  const int order[][2] = {{0, 0}, {0, 1}, {0, 2}, {1, 0}, {1, 1}, {2, 0}};  // (t, b) per row
  std::vector<double> packed;
  for (const auto& [t, b] : order)
    for (int k = 0; k < kInput; ++k) packed.push_back(padded[size_t((t * 3 + b) * kInput + k)]);
  const LayoutRun p = run_layout(CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_PACKED, packed);
  const LayoutRun u = run_layout(CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_UNPACKED, padded);
  CHECK(p.hy == u.hy);
  size_t row = 0;
  for (const auto& [t, b] : order) {
    for (int j = 0; j < kHidden; ++j)
      CHECK(p.y[row * kHidden + size_t(j)] == u.y[size_t((t * 3 + b) * kHidden + j)]);
    ++row;
  }
}

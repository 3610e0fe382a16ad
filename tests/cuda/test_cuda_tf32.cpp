// The TF32 setting (base/math_mode.h) on the GPU. An input of 1 + 2^-13 is exact in fp32 but
// rounds to 1 in TF32 (10 mantissa bits), so a sum of eight such values is 8 + 2^-10 in
// fp32 and 8 with TF32: whichever mode forbids TF32 must give the former, in convolutions
// (cuDNN, under every algorithm it may time) and GEMMs (cuBLAS) alike. Where TF32 is allowed
// on purpose, results need only be within TF32's rounding. (tests/cuda_main.cpp turns TF32
// off for the parity tests, which compare f32 with the CPU at fp32 tolerances.)
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "base/math_mode.h"
#include "engine/ops.h"
#include "engine/ops/conv.h"
#include "tests/cuda/parity_util.h"

using namespace sonata;
using namespace sonata::testing;

namespace {

constexpr float kUnroundable = 1.0f + 0x1p-13f;
constexpr double kExactSum = 8.0 + 0x1p-10;
// What fp32 may be off by, whatever algorithm cuDNN times fastest (FFT ones round in
// between, about 1e-6 here): ten times below the 2^-10 that TF32 loses.
constexpr double kFp32Slack = 1e-4;
constexpr double kTf32Slack = 8 * 0x1p-10;

TensorOptions cuda_f32() {
  return TensorOptions{}.with(DType::f32).with(Device::cuda());
}

std::vector<float> host(const Tensor& t) {
  return t.to(Device::cpu()).contiguous().to_vector<float>();
}

// Every output of a 1x1 convolution over 8 channels of kUnroundable with unit weights.
std::vector<float> conv_of_unroundable() {
  const Tensor x = full({2, 8, 5, 5}, kUnroundable, cuda_f32());
  const Tensor w = ones({3, 8, 1, 1}, cuda_f32());
  return host(conv2d(x, w));
}

// Every entry of [4, 8] x [8, 3], the left filled with kUnroundable, the right with ones.
std::vector<float> gemm_of_unroundable() {
  return host(matmul(full({4, 8}, kUnroundable, cuda_f32()), ones({8, 3}, cuda_f32())));
}

void require_all_near(const std::vector<float>& values, double expected, double slack) {
  REQUIRE_FALSE(values.empty());
  for (float v : values) REQUIRE(std::abs(double(v) - expected) <= slack);
}

}  // namespace

TEST_CASE("TF32 off: f32 convolutions and GEMMs keep fp32's rounding", "[cuda][tf32]") {
  REQUIRE(float(kExactSum) == 8.0f + 0x1p-10f);  // the exact sum is itself an fp32 value
  const Tf32ModeGuard off(Tf32Mode::off);
  require_all_near(conv_of_unroundable(), kExactSum, kFp32Slack);
  require_all_near(gemm_of_unroundable(), kExactSum, kFp32Slack);
}

TEST_CASE("TF32 conv (the default): GEMMs still keep fp32's rounding", "[cuda][tf32]") {
  const Tf32ModeGuard conv(Tf32Mode::conv);
  require_all_near(gemm_of_unroundable(), kExactSum, kFp32Slack);
  // The convolution may run on TF32: within its rounding of the inputs.
  require_all_near(conv_of_unroundable(), kExactSum, kTf32Slack);
}

TEST_CASE("TF32 all: convolutions and GEMMs within TF32's rounding", "[cuda][tf32]") {
  const Tf32ModeGuard all(Tf32Mode::all);
  require_all_near(conv_of_unroundable(), kExactSum, kTf32Slack);
  require_all_near(gemm_of_unroundable(), kExactSum, kTf32Slack);
  // And on random data, a convolution and a matmul stay within TF32's relative error of the
  // CPU's fp32 (2^-11 per operand, summed over 72 and 64 products of magnitude <= 1).
  const Tensor x = parity_input({2, 8, 9, 9}, 4100, -1, 1, false);
  const Tensor w = parity_input({4, 8, 3, 3}, 4101, -1, 1, false);
  const std::vector<float> cpu_conv = conv2d(x, w).contiguous().to_vector<float>();
  const std::vector<float> gpu_conv = host(conv2d(x.to(Device::cuda()), w.to(Device::cuda())));
  const Tensor a = parity_input({16, 64}, 4102, -1, 1, false);
  const Tensor b = parity_input({64, 8}, 4103, -1, 1, false);
  const std::vector<float> cpu_mm = matmul(a, b).to_vector<float>();
  const std::vector<float> gpu_mm = host(matmul(a.to(Device::cuda()), b.to(Device::cuda())));
  REQUIRE(gpu_conv.size() == cpu_conv.size());
  for (size_t i = 0; i < cpu_conv.size(); ++i)
    REQUIRE(std::abs(gpu_conv[i] - cpu_conv[i]) <= 72 * 2 * 0x1p-11);
  REQUIRE(gpu_mm.size() == cpu_mm.size());
  for (size_t i = 0; i < cpu_mm.size(); ++i)
    REQUIRE(std::abs(gpu_mm[i] - cpu_mm[i]) <= 64 * 2 * 0x1p-11);
}

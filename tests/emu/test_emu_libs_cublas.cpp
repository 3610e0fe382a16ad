// The emulated cuBLAS against a naive column-major product written here.
#include <cublas_v2.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <thread>

#include "emu/libs/counters.h"
#include "tests/emu/test_emu_libs_support.h"

namespace {

using sonata::emu::test::DeviceBuffer;
using sonata::emu::test::TestStream;

// C = alpha * op(A) op(B) + beta * C, column-major, in double.
std::vector<double> reference_gemm(bool ta, bool tb, int m, int n, int k, double alpha,
                                   const std::vector<double>& a, int lda,
                                   const std::vector<double>& b, int ldb, double beta,
                                   std::vector<double> c, int ldc) {
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < m; ++i) {
      double sum = 0;
      for (int l = 0; l < k; ++l) {
        const double x = ta ? a[size_t(l + i * lda)] : a[size_t(i + l * lda)];
        const double y = tb ? b[size_t(j + l * ldb)] : b[size_t(l + j * ldb)];
        sum += x * y;
      }
      c[size_t(i + j * ldc)] = alpha * sum + beta * c[size_t(i + j * ldc)];
    }
  return c;
}

struct Handle {
  Handle() { REQUIRE(cublasCreate(&handle) == CUBLAS_STATUS_SUCCESS); }
  ~Handle() { cublasDestroy(handle); }
  cublasHandle_t handle = nullptr;
};

}  // namespace

TEST_CASE("emulated cublasGemmEx matches a naive product for every transpose in f32 and f64",
          "[emu][cublas]") {
  TestStream stream;
  Handle h;
  REQUIRE(cublasSetStream(h.handle, stream.get()) == CUBLAS_STATUS_SUCCESS);
  const int m = 5, n = 4, k = 3;
  for (const bool ta : {false, true})
    for (const bool tb : {false, true}) {
      const int lda = (ta ? k : m) + 2, ldb = (tb ? n : k) + 1, ldc = m + 3;
      const int a_cols = ta ? m : k, b_cols = tb ? k : n;
      const auto a = sonata::emu::test::random_doubles(size_t(lda * a_cols), 1);
      const auto b = sonata::emu::test::random_doubles(size_t(ldb * b_cols), 2);
      const auto c = sonata::emu::test::random_doubles(size_t(ldc * n), 3);
      const auto want = reference_gemm(ta, tb, m, n, k, 1.5, a, lda, b, ldb, 0.5, c, ldc);
      const auto opa = ta ? CUBLAS_OP_T : CUBLAS_OP_N, opb = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
      SECTION(std::string("f64 ") + (ta ? "T" : "N") + (tb ? "T" : "N")) {
        DeviceBuffer da(a.size() * 8), db(b.size() * 8), dc(c.size() * 8);
        da.upload(a), db.upload(b), dc.upload(c);
        const double alpha = 1.5, beta = 0.5;
        REQUIRE(cublasGemmEx(h.handle, opa, opb, m, n, k, &alpha, da.get(), CUDA_R_64F, lda,
                             db.get(), CUDA_R_64F, ldb, &beta, dc.get(), CUDA_R_64F, ldc,
                             CUBLAS_COMPUTE_64F, CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_SUCCESS);
        REQUIRE(cudaStreamSynchronize(stream.get()) == cudaSuccess);
        const auto got = dc.download<double>(c.size());
        for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == Approx(want[i]).epsilon(1e-12));
      }
      SECTION(std::string("f32 ") + (ta ? "T" : "N") + (tb ? "T" : "N")) {
        std::vector<float> af(a.begin(), a.end()), bf(b.begin(), b.end()), cf(c.begin(), c.end());
        // The reference from the fp32 values, so only the emulator's rounding differs.
        const auto want32 =
            reference_gemm(ta, tb, m, n, k, 1.5, {af.begin(), af.end()}, lda,
                           {bf.begin(), bf.end()}, ldb, 0.5, {cf.begin(), cf.end()}, ldc);
        DeviceBuffer da(af.size() * 4), db(bf.size() * 4), dc(cf.size() * 4);
        da.upload(af), db.upload(bf), dc.upload(cf);
        const float alpha = 1.5f, beta = 0.5f;
        REQUIRE(cublasGemmEx_64(h.handle, opa, opb, m, n, k, &alpha, da.get(), CUDA_R_32F, lda,
                                db.get(), CUDA_R_32F, ldb, &beta, dc.get(), CUDA_R_32F, ldc,
                                CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_SUCCESS);
        REQUIRE(cudaStreamSynchronize(stream.get()) == cudaSuccess);
        const auto got = dc.download<float>(cf.size());
        for (size_t i = 0; i < got.size(); ++i)
          CHECK(double(got[i]) == Approx(want32[i]).epsilon(1e-6).margin(1e-6));
      }
    }
}

TEST_CASE("emulated cublasGemmStridedBatchedEx_64 with f16 and bf16 accumulates in fp32",
          "[emu][cublas]") {
  TestStream stream;
  Handle h;
  REQUIRE(cublasSetStream(h.handle, stream.get()) == CUBLAS_STATUS_SUCCESS);
  const int m = 3, n = 2, k = 4, batch = 3;
  const long long sa = m * k + 2, sb = k * n + 1, sc = m * n + 3;
  for (const bool bf16 : {false, true}) {
    const auto af = sonata::emu::test::random_floats(size_t(sa * batch), 11);
    const auto bf = sonata::emu::test::random_floats(size_t(sb * batch), 12);
    std::vector<uint16_t> a16, b16;
    std::vector<double> a_round, b_round;
    for (float v : af) {
      a16.push_back(bf16 ? sonata::emu::test::to_bf16(v) : sonata::emu::test::to_half(v));
      a_round.push_back(bf16 ? sonata::emu::test::from_bf16(a16.back())
                             : sonata::emu::test::from_half(a16.back()));
    }
    for (float v : bf) {
      b16.push_back(bf16 ? sonata::emu::test::to_bf16(v) : sonata::emu::test::to_half(v));
      b_round.push_back(bf16 ? sonata::emu::test::from_bf16(b16.back())
                             : sonata::emu::test::from_half(b16.back()));
    }
    DeviceBuffer da(a16.size() * 2), db(b16.size() * 2), dc(size_t(sc * batch) * 2);
    da.upload(a16), db.upload(b16);
    const float alpha = 1.0f, beta = 0.0f;
    const cudaDataType type = bf16 ? CUDA_R_16BF : CUDA_R_16F;
    REQUIRE(cublasGemmStridedBatchedEx_64(h.handle, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &alpha,
                                          da.get(), type, m, sa, db.get(), type, k, sb, &beta,
                                          dc.get(), type, m, sc, batch, CUBLAS_COMPUTE_32F,
                                          CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_SUCCESS);
    REQUIRE(cudaStreamSynchronize(stream.get()) == cudaSuccess);
    const auto got = dc.download<uint16_t>(size_t(sc * batch));
    for (int b = 0; b < batch; ++b) {
      const std::vector<double> a_b(a_round.begin() + b * sa, a_round.begin() + (b + 1) * sa);
      const std::vector<double> b_b(b_round.begin() + b * sb, b_round.begin() + (b + 1) * sb);
      const auto want = reference_gemm(false, false, m, n, k, 1.0, a_b, m, b_b, k, 0.0,
                                       std::vector<double>(size_t(m * n), 0.0), m);
      for (int i = 0; i < m * n; ++i) {
        const uint16_t bits = got[size_t(b * sc + i)];
        const float value =
            bf16 ? sonata::emu::test::from_bf16(bits) : sonata::emu::test::from_half(bits);
        CHECK(double(value) == Approx(want[size_t(i)]).epsilon(bf16 ? 1e-2 : 2e-3).margin(1e-3));
      }
    }
  }
}

TEST_CASE("emulated cuBLAS rounds fp32 operands to TF32 only when TF32 is allowed",
          "[emu][cublas]") {
  TestStream stream;
  Handle h;
  REQUIRE(cublasSetStream(h.handle, stream.get()) == CUBLAS_STATUS_SUCCESS);
  // 1 + 2^-12 is below TF32's 10-bit mantissa: it rounds to 1.
  const std::vector<float> a = {1.0f + std::ldexp(1.0f, -12)}, b = {1.0f};
  DeviceBuffer da(4), db(4), dc(4);
  da.upload(a), db.upload(b);
  const float alpha = 1.0f, beta = 0.0f;
  auto run = [&](cublasComputeType_t compute, cublasMath_t math) {
    REQUIRE(cublasSetMathMode(h.handle, math) == CUBLAS_STATUS_SUCCESS);
    REQUIRE(cublasGemmEx(h.handle, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &alpha, da.get(), CUDA_R_32F,
                         1, db.get(), CUDA_R_32F, 1, &beta, dc.get(), CUDA_R_32F, 1, compute,
                         CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_SUCCESS);
    REQUIRE(cudaStreamSynchronize(stream.get()) == cudaSuccess);
    return dc.download<float>(1)[0];
  };
  CHECK(run(CUBLAS_COMPUTE_32F, CUBLAS_DEFAULT_MATH) == a[0]);
  CHECK(run(CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_DEFAULT_MATH) == 1.0f);
  CHECK(run(CUBLAS_COMPUTE_32F, CUBLAS_TF32_TENSOR_OP_MATH) == 1.0f);
}

TEST_CASE("emulated cuBLAS does not read C when beta is zero", "[emu][cublas]") {
  TestStream stream;
  Handle h;
  REQUIRE(cublasSetStream(h.handle, stream.get()) == CUBLAS_STATUS_SUCCESS);
  DeviceBuffer da(4), db(4), dc(4);
  da.upload(std::vector<float>{2.0f}), db.upload(std::vector<float>{3.0f});
  dc.upload(std::vector<float>{std::numeric_limits<float>::quiet_NaN()});
  const float alpha = 1.0f, beta = 0.0f;
  REQUIRE(cublasGemmEx(h.handle, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &alpha, da.get(), CUDA_R_32F, 1,
                       db.get(), CUDA_R_32F, 1, &beta, dc.get(), CUDA_R_32F, 1, CUBLAS_COMPUTE_32F,
                       CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_SUCCESS);
  REQUIRE(cudaStreamSynchronize(stream.get()) == cudaSuccess);
  CHECK(dc.download<float>(1)[0] == 6.0f);
}

// Planted defect: A holds an m x k matrix with ld m, but the call says lda m + 4, so the
// last column is read past the allocation's end. Its twin (lda m) runs clean first, on the
// same device (a fault is sticky).
TEST_CASE("emulated cuBLAS catches a GEMM whose lda reads past A's allocation", "[emu][cublas]") {
  TestStream stream;
  Handle h;
  REQUIRE(cublasSetStream(h.handle, stream.get()) == CUBLAS_STATUS_SUCCESS);
  const int m = 8, n = 2, k = 4;
  DeviceBuffer da(size_t(m * k) * 4), db(size_t(k * n) * 4), dc(size_t(m * n) * 4);
  da.upload(sonata::emu::test::random_floats(size_t(m * k), 5));
  db.upload(sonata::emu::test::random_floats(size_t(k * n), 6));
  const float alpha = 1.0f, beta = 0.0f;
  auto gemm = [&](int lda) {
    return cublasGemmEx(h.handle, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &alpha, da.get(), CUDA_R_32F,
                        lda, db.get(), CUDA_R_32F, k, &beta, dc.get(), CUDA_R_32F, m,
                        CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  };
  REQUIRE(gemm(m) == CUBLAS_STATUS_SUCCESS);
  REQUIRE(cudaStreamSynchronize(stream.get()) == cudaSuccess);
  REQUIRE(gemm(m + 4) == CUBLAS_STATUS_SUCCESS);  // legal arguments; the access is the fault
  CHECK(cudaStreamSynchronize(stream.get()) != cudaSuccess);
}

TEST_CASE("emulated cuBLAS refuses an lda below op(A)'s rows", "[emu][cublas]") {
  Handle h;
  DeviceBuffer da(64), db(64), dc(64);
  const float alpha = 1.0f, beta = 0.0f;
  CHECK(cublasGemmEx(h.handle, CUBLAS_OP_N, CUBLAS_OP_N, 4, 2, 2, &alpha, da.get(), CUDA_R_32F, 3,
                     db.get(), CUDA_R_32F, 2, &beta, dc.get(), CUDA_R_32F, 4, CUBLAS_COMPUTE_32F,
                     CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_INVALID_VALUE);
  CHECK(sonata::emu::last_library_message().find("lda 3") != std::string::npos);
}

TEST_CASE("emulated cuBLAS refuses a handle used with a stream of another device",
          "[emu][cublas]") {
  REQUIRE(cudaSetDevice(0) == cudaSuccess);
  Handle h;  // device 0
  DeviceBuffer da(4), db(4), dc(4);
  da.upload(std::vector<float>{1.0f}), db.upload(std::vector<float>{1.0f});
  const float alpha = 1.0f, beta = 0.0f;
  auto gemm = [&] {
    return cublasGemmEx(h.handle, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &alpha, da.get(), CUDA_R_32F,
                        1, db.get(), CUDA_R_32F, 1, &beta, dc.get(), CUDA_R_32F, 1,
                        CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  };
  {
    TestStream own;
    REQUIRE(cublasSetStream(h.handle, own.get()) == CUBLAS_STATUS_SUCCESS);
    CHECK(gemm() == CUBLAS_STATUS_SUCCESS);
    REQUIRE(cudaStreamSynchronize(own.get()) == cudaSuccess);
  }
  REQUIRE(cudaSetDevice(1) == cudaSuccess);
  {
    TestStream other;  // device 1
    REQUIRE(cublasSetStream(h.handle, other.get()) == CUBLAS_STATUS_SUCCESS);
    CHECK(gemm() == CUBLAS_STATUS_EXECUTION_FAILED);
    CHECK(sonata::emu::last_library_message().find("device 1") != std::string::npos);
  }
  REQUIRE(cudaSetDevice(0) == cudaSuccess);
}

TEST_CASE("emulated cublasSetWorkspace wants 256-byte alignment and the GEMM writes it",
          "[emu][cublas]") {
  TestStream stream;
  Handle h;
  DeviceBuffer workspace(1024);
  REQUIRE(cublasSetStream(h.handle, stream.get()) == CUBLAS_STATUS_SUCCESS);
  CHECK(cublasSetWorkspace(h.handle, workspace.as<char>() + 16, 512) ==
        CUBLAS_STATUS_INVALID_VALUE);
  REQUIRE(cublasSetWorkspace(h.handle, workspace.get(), 1024) == CUBLAS_STATUS_SUCCESS);
  DeviceBuffer da(4), db(4), dc(4);
  da.upload(std::vector<float>{1.0f}), db.upload(std::vector<float>{1.0f});
  const float alpha = 1.0f, beta = 0.0f;
  auto gemm = [&] {
    return cublasGemmEx(h.handle, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &alpha, da.get(), CUDA_R_32F,
                        1, db.get(), CUDA_R_32F, 1, &beta, dc.get(), CUDA_R_32F, 1,
                        CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  };
  REQUIRE(gemm() == CUBLAS_STATUS_SUCCESS);
  REQUIRE(cudaStreamSynchronize(stream.get()) == cudaSuccess);
  // A workspace claimed larger than its allocation is written past its end.
  REQUIRE(cublasSetWorkspace(h.handle, workspace.get(), 4096) == CUBLAS_STATUS_SUCCESS);
  REQUIRE(gemm() == CUBLAS_STATUS_SUCCESS);
  CHECK(cudaStreamSynchronize(stream.get()) != cudaSuccess);
}

// The runtime refuses a thread that never selected a device in a process that selected
// another than 0 (on a card it would open a context on GPU 0); the libraries answer with
// their own error instead of throwing through their C interface. The twin selects first.
TEST_CASE("emulated cublasCreate refuses a thread that never selected a device", "[emu][cublas]") {
  REQUIRE(cudaSetDevice(1) == cudaSuccess);
  cublasStatus_t unselected = CUBLAS_STATUS_SUCCESS, selected = CUBLAS_STATUS_NOT_INITIALIZED;
  std::thread([&] {
    cublasHandle_t handle = nullptr;
    unselected = cublasCreate(&handle);
    if (unselected == CUBLAS_STATUS_SUCCESS) cublasDestroy(handle);
  }).join();
  std::thread([&] {
    cudaSetDevice(1);
    cublasHandle_t handle = nullptr;
    selected = cublasCreate(&handle);
    if (selected == CUBLAS_STATUS_SUCCESS) cublasDestroy(handle);
  }).join();
  CHECK(unselected == CUBLAS_STATUS_NOT_INITIALIZED);
  CHECK(selected == CUBLAS_STATUS_SUCCESS);
  REQUIRE(cudaSetDevice(0) == cudaSuccess);
}

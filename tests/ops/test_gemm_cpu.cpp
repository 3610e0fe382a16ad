// The hand-written few-rows / short-inner GEMM against a double-precision triple loop, for
// every transposition, padded leading dimensions and each kind of beta.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "kernels/cpu/gemm_skinny.h"

using namespace sonata::kernels;
using namespace sonata::kernels::cpu;

namespace {

template <typename T>
void check_case(int64_t m, int64_t n, int64_t k, bool trans_a, bool trans_b, double beta,
                double tolerance) {
  GemmShape s;
  s.m = m, s.n = n, s.k = k, s.trans_a = trans_a, s.trans_b = trans_b;
  // Leading dimensions padded past the logical width, so a wrong stride reads junk.
  s.lda = (trans_a ? m : k) + 3;
  s.ldb = (trans_b ? k : n) + 2;
  s.ldc = n + 5;
  std::mt19937 rng(unsigned(m * 131 + n * 7 + k + trans_a * 2 + trans_b));
  std::uniform_real_distribution<double> uniform(-1, 1);
  std::vector<T> a(size_t((trans_a ? k : m) * s.lda)), b(size_t((trans_b ? n : k) * s.ldb)),
      c(size_t(m * s.ldc));
  for (T& v : a) v = T(uniform(rng));
  for (T& v : b) v = T(uniform(rng));
  for (T& v : c) v = T(uniform(rng));
  if (beta == 0)  // BLAS never reads C when beta is 0: NaN there must not leak out
    for (T& v : c) v = T(NAN);
  const std::vector<T> c_before = c;
  const double alpha = 0.75;
  REQUIRE(skinny_gemm_applies(s));
  skinny_gemm<T>(s, T(alpha), a.data(), b.data(), T(beta), c.data());
  // The worst error over C, checked once per case (millions of REQUIREs are slow).
  double worst = 0;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double expected = 0;
      for (int64_t p = 0; p < k; ++p) {
        const double av = double(trans_a ? a[size_t(p * s.lda + i)] : a[size_t(i * s.lda + p)]);
        const double bv = double(trans_b ? b[size_t(j * s.ldb + p)] : b[size_t(p * s.ldb + j)]);
        expected += av * bv;
      }
      expected *= alpha;
      if (beta != 0) expected += beta * double(c_before[size_t(i * s.ldc + j)]);
      const double error =
          std::abs(double(c[size_t(i * s.ldc + j)]) - expected) / (1 + std::abs(expected));
      worst = std::isnan(error) ? INFINITY : std::max(worst, error);
    }
  INFO("m " << m << " n " << n << " k " << k << " trans " << trans_a << trans_b << " beta "
            << beta);
  REQUIRE(worst <= tolerance);
  bool padding_kept = true;
  // Padding columns of C are untouched.
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = n; j < s.ldc; ++j) {
      const T before = c_before[size_t(i * s.ldc + j)], after = c[size_t(i * s.ldc + j)];
      padding_kept = padding_kept &&
                     ((std::isnan(double(before)) && std::isnan(double(after))) || before == after);
    }
  CHECK(padding_kept);
}

}  // namespace

TEST_CASE("skinny GEMM matches a triple loop in every layout", "[ops][linalg][gemm]") {
  struct Dims {
    int64_t m, n, k;
  };
  // Few rows (incl. past one column block), short inner dimension, and both at once.
  const std::vector<Dims> dims = {{1, 1, 1},   {8, 1030, 37},   {3, 2500, 300}, {16, 17, 1000},
                                  {40, 33, 8}, {100, 1100, 16}, {5, 6, 3}};
  for (const Dims& d : dims)
    for (bool trans_a : {false, true})
      for (bool trans_b : {false, true})
        for (double beta : {0.0, 1.0, -0.5}) {
          check_case<double>(d.m, d.n, d.k, trans_a, trans_b, beta, 1e-13);
          check_case<float>(d.m, d.n, d.k, trans_a, trans_b, beta, 2e-5);
        }
}

TEST_CASE("skinny GEMM leaves large products to BLAS", "[ops][linalg][gemm]") {
  GemmShape s;
  s.m = 64, s.n = 64, s.k = 64;
  CHECK_FALSE(skinny_gemm_applies(s));
  s.m = 16;
  CHECK(skinny_gemm_applies(s));
  s.m = 64, s.k = 16;
  CHECK(skinny_gemm_applies(s));
  s.n = 0;
  CHECK_FALSE(skinny_gemm_applies(s));
}

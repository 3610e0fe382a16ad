// The hand-written CPU GEMMs (few-rows / short-inner, and the packed AVX2 and AVX-512 sgemms)
// against a double-precision triple loop, for every transposition, padded leading dimensions,
// edge tiles and blocks, and each kind of beta; at every CPU capability this machine has.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <random>
#include <type_traits>
#include <vector>

#include "kernels/cpu/capability.h"
#include "kernels/cpu/gemm_packed.h"
#include "kernels/cpu/gemm_skinny.h"

using namespace sonata::kernels;
using namespace sonata::kernels::cpu;

namespace {

enum class Kernel { skinny, packed };

// The capabilities this CPU can run, each as its own SECTION-like pass.
std::vector<Capability> runnable_capabilities() {
  std::vector<Capability> runnable;
  for (const Capability c : {Capability::baseline, Capability::avx2, Capability::avx512})
    if (capability_supported(c)) runnable.push_back(c);
  return runnable;
}

template <typename T>
void check_case(Kernel kernel, int64_t m, int64_t n, int64_t k, bool trans_a, bool trans_b,
                double beta, double tolerance) {
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
  if (kernel == Kernel::skinny) {
    REQUIRE(skinny_gemm_applies(s));
    skinny_gemm<T>(s, T(alpha), a.data(), b.data(), T(beta), c.data());
  } else {
    if constexpr (std::is_same_v<T, float>)
      packed_sgemm(s, float(alpha), a.data(), b.data(), float(beta), c.data());
  }
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
  // Few rows (incl. past one column block, and a B past 4 MiB that few_rows streams 16 rows
  // at a time), short inner dimension, and both at once.
  const std::vector<Dims> dims = {{1, 1, 1},   {8, 1030, 37},   {3, 2500, 300}, {16, 17, 1000},
                                  {40, 33, 8}, {100, 1100, 16}, {5, 6, 3},      {5, 4100, 300}};
  for (const Capability capability : runnable_capabilities()) {
    const ScopedCapability scoped(capability);
    INFO("capability " << capability_name(capability));
    for (const Dims& d : dims)
      for (bool trans_a : {false, true})
        for (bool trans_b : {false, true})
          for (double beta : {0.0, 1.0, -0.5}) {
            check_case<double>(Kernel::skinny, d.m, d.n, d.k, trans_a, trans_b, beta, 1e-13);
            check_case<float>(Kernel::skinny, d.m, d.n, d.k, trans_a, trans_b, beta, 2e-5);
          }
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

TEST_CASE("packed sgemm matches a triple loop in every layout", "[ops][linalg][gemm]") {
  GemmShape probe;
  probe.m = 64, probe.n = 64, probe.k = 256;
  struct Dims {
    int64_t m, n, k;
  };
  // Whole tiles; ragged tiles in m, n and k; past one block of rows (AVX-512 256, AVX2 168),
  // of columns (3072) and of depth (192 / 256, several slices so beta applies once);
  // tall-narrow and short-wide C, which the threads split along different sides.
  const std::vector<Dims> dims = {{64, 96, 192}, {13, 50, 17},     {300, 100, 400},
                                  {9, 3100, 40}, {520, 24, 200},   {33, 47, 1000},
                                  {8, 48, 16},   {257, 3073, 193}, {170, 40, 257}};
  int tested = 0;
  for (const Capability capability : runnable_capabilities()) {
    const ScopedCapability scoped(capability);
    // The baseline has no packed sgemm; SONATA_PACKED_SGEMM=0 turns them all off.
    if (!packed_sgemm_applies(probe)) continue;
    INFO("capability " << capability_name(capability));
    ++tested;
    for (const Dims& d : dims)
      for (bool trans_a : {false, true})
        for (bool trans_b : {false, true})
          for (double beta : {0.0, 1.0, -0.5})
            check_case<float>(Kernel::packed, d.m, d.n, d.k, trans_a, trans_b, beta,
                              2e-6 * std::sqrt(double(d.k)));
  }
  if (tested == 0)
    WARN("no packed sgemm at any capability here (no AVX2, or SONATA_PACKED_SGEMM=0): skipped");
}

TEST_CASE("packed sgemm takes only products large enough to repay packing", "[ops][linalg][gemm]") {
  for (const Capability capability : runnable_capabilities()) {
    const ScopedCapability scoped(capability);
    INFO("capability " << capability_name(capability));
    GemmShape s;
    s.m = 64, s.n = 64, s.k = 256;
    s.m = 4;  // fewer rows than a register tile
    CHECK_FALSE(packed_sgemm_applies(s));
    s.m = 64, s.k = 8;
    CHECK_FALSE(packed_sgemm_applies(s));
    s.k = 256, s.n = 8;
    CHECK_FALSE(packed_sgemm_applies(s));
    s.m = 16, s.n = 24, s.k = 16;  // too little work
    CHECK_FALSE(packed_sgemm_applies(s));
  }
}

#include <catch2/catch.hpp>

#include "base/error.h"
#include "engine/ops.h"
#include "tests/cases/linalg_cases.h"
#include "tests/ops/op_test_util.h"

using namespace sonata;
using namespace sonata::testing;

namespace {

// Naive [B,M,K] x [B,K,N] in double over row-major vectors.
std::vector<double> naive_bmm(const std::vector<double>& a, const std::vector<double>& b,
                              int64_t batch, int64_t m, int64_t k, int64_t n) {
  std::vector<double> out(size_t(batch * m * n), 0.0);
  for (int64_t p = 0; p < batch; ++p)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (int64_t l = 0; l < k; ++l)
          acc += a[size_t((p * m + i) * k + l)] * b[size_t((p * k + l) * n + j)];
        out[size_t((p * m + i) * n + j)] = acc;
      }
  return out;
}

void check_close(const std::vector<double>& got, const std::vector<double>& expected,
                 double epsilon = 1e-13) {
  REQUIRE(got.size() == expected.size());
  for (size_t i = 0; i < got.size(); ++i)
    CHECK(got[i] == Approx(expected[i]).epsilon(epsilon).margin(epsilon));
}

}  // namespace

TEST_CASE("matmul gradients for 1-D to 4-D shapes", "[ops][linalg][grad]") {
  uint64_t seed = 200;
  for (const MatmulCase& c : matmul_cases()) {
    INFO(shape_str(c.a) << " @ " << shape_str(c.b));
    const Tensor a = grad_input(c.a, ++seed), b = grad_input(c.b, ++seed);
    require_gradients([](const std::vector<Tensor>& in) { return matmul(in[0], in[1]); }, {a, b});
    CHECK(matmul(a, b).shape() == c.out);
  }
}

TEST_CASE("matmul forward matches a naive triple loop", "[ops][linalg]") {
  uint64_t seed = 300;
  for (const MatmulCase& c : matmul_cases()) {
    INFO(shape_str(c.a) << " @ " << shape_str(c.b));
    const Tensor a = grad_input(c.a, ++seed).detach(), b = grad_input(c.b, ++seed).detach();
    // Bring both to [B,M,K] / [B,K,N] by hand: pad 1-D operands, then broadcast the batch.
    Shape as = c.a, bs = c.b;
    if (as.size() == 1) as.insert(as.begin(), 1);
    if (bs.size() == 1) bs.push_back(1);
    const int64_t m = as[as.size() - 2], k = as.back(), n = bs.back();
    Shape batch = c.out;
    if (c.a.size() > 1) batch.pop_back();  // drop m
    if (c.b.size() > 1) batch.pop_back();  // drop n
    Shape a_full = batch, b_full = batch;
    a_full.insert(a_full.end(), {m, k});
    b_full.insert(b_full.end(), {k, n});
    const int64_t batch_count = shape_numel(batch);
    const std::vector<double> av = values_of(a.reshape(as).expand(a_full).contiguous());
    const std::vector<double> bv = values_of(b.reshape(bs).expand(b_full).contiguous());
    check_close(values_of(matmul(a, b)), naive_bmm(av, bv, batch_count, m, k, n));
    // f32 is close to the f64 truth.
    check_close(values_of(matmul(a.to(DType::f32), b.to(DType::f32))),
                naive_bmm(av, bv, batch_count, m, k, n), 1e-5);
  }
}

TEST_CASE("matmul of written-out matrices", "[ops][linalg]") {
  const Tensor a = f64_tensor({1, 2, 3, 4, 5, 6}, {2, 3});
  const Tensor b = f64_tensor({7, 8, 9, 10, 11, 12}, {3, 2});
  CHECK(values_of(matmul(a, b)) == std::vector<double>{58, 64, 139, 154});
  CHECK(values_of(matmul(a, f64_tensor({1, 0, -1}, {3}))) == std::vector<double>{-2, -2});
}

TEST_CASE("matmul and bmm with transposed and strided operands", "[ops][linalg][grad]") {
  SECTION("matmul of transposed views") {
    const Tensor a = grad_input({4, 3}, 401), b = grad_input({2, 4}, 402);
    require_gradients([](const std::vector<Tensor>& in) { return matmul(in[0].t(), in[1].t()); },
                      {a, b});
  }
  SECTION("matmul of a strided slice") {
    const Tensor a = grad_input({6, 4}, 403), b = grad_input({4, 2}, 404);
    require_gradients(
        [](const std::vector<Tensor>& in) { return matmul(in[0].slice(0, 0, 6, 2), in[1]); },
        {a, b});
  }
  SECTION("bmm") {
    const Tensor a = grad_input({2, 3, 4}, 405), b = grad_input({2, 4, 2}, 406);
    require_gradients([](const std::vector<Tensor>& in) { return bmm(in[0], in[1]); }, {a, b});
  }
  SECTION("bmm of transposed and permuted views") {
    const Tensor a = grad_input({2, 4, 3}, 407), b = grad_input({2, 2, 4}, 408);
    require_gradients(
        [](const std::vector<Tensor>& in) {
          return bmm(in[0].transpose(1, 2), in[1].permute({0, 2, 1}));
        },
        {a, b});
  }
  SECTION("bmm with the batch dim innermost in memory") {
    const Tensor a = grad_input({3, 4, 2}, 409), b = grad_input({2, 4, 2}, 410);
    require_gradients(
        [](const std::vector<Tensor>& in) {
          return bmm(in[0].permute({2, 0, 1}), in[1]);
        },
        {a, b});
  }
}

TEST_CASE("bmm forward matches a naive triple loop", "[ops][linalg]") {
  const Tensor a = grad_input({3, 2, 5}, 411).detach(), b = grad_input({3, 5, 4}, 412).detach();
  check_close(values_of(bmm(a, b)), naive_bmm(values_of(a), values_of(b), 3, 2, 5, 4));
  const Tensor at = grad_input({3, 5, 2}, 413).detach();
  check_close(values_of(bmm(at.transpose(1, 2), b)),
              naive_bmm(values_of(at.transpose(1, 2).contiguous()), values_of(b), 3, 2, 5, 4));
}

TEST_CASE("addmm gradients with bias shapes and scales", "[ops][linalg][grad]") {
  uint64_t seed = 500;
  for (const AddmmCase& c : addmm_cases()) {
    INFO("bias " << shape_str(c.bias) << " beta " << c.beta << " alpha " << c.alpha);
    const Tensor bias = grad_input(c.bias, ++seed), a = grad_input({3, 4}, ++seed),
                 b = grad_input({4, 2}, ++seed);
    require_gradients(
        [&](const std::vector<Tensor>& in) { return addmm(in[0], in[1], in[2], c.beta, c.alpha); },
        {bias, a, b});
    // Forward against the naive product.
    const std::vector<double> product = naive_bmm(values_of(a), values_of(b), 1, 3, 4, 2);
    const std::vector<double> bias_full = values_of(bias.detach().expand({3, 2}).contiguous());
    std::vector<double> expected(6);
    for (size_t i = 0; i < 6; ++i) expected[i] = c.beta * bias_full[i] + c.alpha * product[i];
    check_close(values_of(addmm(bias, a, b, c.beta, c.alpha)), expected);
  }
  SECTION("transposed operands") {
    const Tensor bias = grad_input({2}, 520), a = grad_input({4, 3}, 521),
                 b = grad_input({2, 4}, 522);
    require_gradients(
        [](const std::vector<Tensor>& in) { return addmm(in[0], in[1].t(), in[2].t(), 0.5, 2.0); },
        {bias, a, b});
  }
}

TEST_CASE("matmul errors name the shapes", "[ops][linalg][errors]") {
  CHECK_THROWS_WITH(matmul(zeros({2, 3}), zeros({4, 2})),
                    Catch::Contains("[2, 3]") && Catch::Contains("[4, 2]"));
  CHECK_THROWS_WITH(bmm(zeros({2, 3, 4}), zeros({3, 4, 2})),
                    Catch::Contains("[2, 3, 4]") && Catch::Contains("[3, 4, 2]"));
  CHECK_THROWS_AS(addmm(zeros({5}), zeros({2, 3}), zeros({3, 4})), Error);
  CHECK_THROWS_WITH(matmul(zeros({2, 2, 3}), zeros({3, 3, 2})),
                    Catch::Contains("[2]") && Catch::Contains("[3]"));
}

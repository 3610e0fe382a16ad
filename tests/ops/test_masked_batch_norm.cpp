// masked_batch_norm: forward and running stats against plain batch_norm over the valid values
// gathered by slicing (an independent path), zeros on padding, results that do not change
// when the batch is padded further (with any values), float64 gradient checks in training and
// evaluation, f32 against f64, the SyncBatchNorm path against the local one, every argument
// error. Shapes from tests/cases/batch_norm_cases.h.
#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

#include "base/error.h"
#include "engine/ops.h"
#include "engine/ops/masked_batch_norm.h"
#include "tests/cases/batch_norm_cases.h"
#include "tests/ops/op_test_util.h"
#include "tests/support/tensor_compare.h"

using namespace sonata;
using namespace sonata::testing;

namespace {

Tensor lengths_of(const MaskedBatchNormCase& test) {
  return from_vector(test.lengths, {int64_t(test.lengths.size())});
}

// The valid values of x [N, C, T, *] as [1, C, M]: each sample's first lengths[n] frames.
Tensor gather_valid(const Tensor& x, const std::vector<int64_t>& lengths) {
  std::vector<Tensor> parts;
  const int64_t channels = x.size(1);
  for (int64_t n = 0; n < x.size(0); ++n)
    if (lengths[size_t(n)] > 0)
      parts.push_back(
          x.select(0, n).slice(1, 0, lengths[size_t(n)]).contiguous().reshape({channels, -1}));
  return cat(parts, 1).unsqueeze(0);
}

// x with every frame at or past its sample's length set to 0.
Tensor zero_padding(const Tensor& x, const std::vector<int64_t>& lengths) {
  Tensor out = x.detach().clone();
  for (int64_t n = 0; n < x.size(0); ++n) {
    const int64_t length = lengths[size_t(n)];
    if (length < x.size(2))
      out.select(0, n)
          .slice(1, length, x.size(2))
          .copy_(zeros_like(x.select(0, n).slice(1, length, x.size(2))));
  }
  return out;
}

// x padded along T to `frames` with values drawn from `seed` (not zeros: whatever a padded
// frame holds must not matter).
Tensor pad_with_noise(const Tensor& x, int64_t frames, uint64_t seed) {
  Shape extra = x.shape();
  extra[2] = frames - x.size(2);
  return cat({x.detach(), grad_input(extra, seed, -5, 5).detach()}, 2);
}

Tensor grad_leaf(const Tensor& t) {
  Tensor leaf = t.detach().clone();
  leaf.set_requires_grad(true);
  return leaf;
}

// A world of one process: the SyncBatchNorm path with nothing to combine.
class OneProcessReducer : public BatchNormStatsReducer {
 public:
  Tensor gather(const Tensor& values) override { return values.unsqueeze(0).clone(); }
};

}  // namespace

TEST_CASE("masked_batch_norm normalises with the statistics of the valid frames",
          "[ops][batch_norm][masked_batch_norm]") {
  uint64_t seed = 900;
  for (const MaskedBatchNormCase& test : masked_batch_norm_cases()) {
    INFO(test.name);
    const int64_t c = test.x[1];
    const Tensor x = grad_input(test.x, ++seed, -2, 3).detach();
    const Tensor w = grad_input({c}, ++seed, 0.5, 1.5).detach(),
                 b = grad_input({c}, ++seed).detach();
    Tensor rm = grad_input({c}, ++seed).detach(), rv = grad_input({c}, ++seed, 0.5, 2).detach();
    Tensor rm_plain = rm.clone(), rv_plain = rv.clone();
    const Tensor y = masked_batch_norm(x, lengths_of(test), w, b, rm, rv, {true, 0.1, 1e-5});
    const Tensor expected =
        batch_norm(gather_valid(x, test.lengths), w, b, rm_plain, rv_plain, {true, 0.1, 1e-5});
    CHECK(relative_error(gather_valid(y, test.lengths), expected) < 1e-12);
    CHECK(max_abs(sub(y, zero_padding(y, test.lengths))) == 0.0);  // 0 on padding
    CHECK(relative_error(rm, rm_plain) < 1e-12);
    CHECK(relative_error(rv, rv_plain) < 1e-12);
    // Evaluation: the running statistics, still 0 on padding.
    const Tensor y_eval = masked_batch_norm(x, lengths_of(test), w, b, rm, rv, {false, 0.1, 1e-5});
    const Tensor expected_eval =
        batch_norm(gather_valid(x, test.lengths), w, b, rm_plain, rv_plain, {false, 0.1, 1e-5});
    CHECK(relative_error(gather_valid(y_eval, test.lengths), expected_eval) < 1e-12);
    CHECK(max_abs(sub(y_eval, zero_padding(y_eval, test.lengths))) == 0.0);
  }
}

TEST_CASE("masked_batch_norm's result and gradients do not depend on the padding",
          "[ops][batch_norm][masked_batch_norm]") {
  uint64_t seed = 1000;
  for (const MaskedBatchNormCase& test : masked_batch_norm_cases()) {
    INFO(test.name);
    const int64_t c = test.x[1], frames = test.x[2];
    const Tensor x = grad_input(test.x, ++seed, -2, 3).detach();
    const Tensor w = grad_input({c}, ++seed, 0.5, 1.5).detach(),
                 b = grad_input({c}, ++seed).detach();
    const Tensor dy = grad_input(test.x, ++seed).detach();
    for (bool training : {true, false}) {
      INFO("training " << training);
      // The batch as given, and padded 8 frames further with noise (the upstream gradient
      // padded with noise too).
      const Tensor x_long = pad_with_noise(x, frames + 8, ++seed);
      const Tensor dy_long = pad_with_noise(dy, frames + 8, ++seed);
      Tensor rm = zeros({c}, f64_options()), rv = ones({c}, f64_options());
      Tensor rm_long = rm.clone(), rv_long = rv.clone();
      const Tensor xs = grad_leaf(zero_padding(x, test.lengths)), ws = grad_leaf(w),
                   bs = grad_leaf(b);
      const Tensor xl = grad_leaf(x_long), wl = grad_leaf(w), bl = grad_leaf(b);
      const BatchNormOptions options{training, 0.1, 1e-5};
      const Tensor y = masked_batch_norm(xs, lengths_of(test), ws, bs, rm, rv, options);
      const Tensor y_long =
          masked_batch_norm(xl, lengths_of(test), wl, bl, rm_long, rv_long, options);
      sum(mul(y, dy)).backward();
      sum(mul(y_long, dy_long)).backward();
      CHECK(relative_error(y_long.slice(2, 0, frames), y) < 1e-12);
      CHECK(max_abs(y_long.slice(2, frames, frames + 8)) == 0.0);
      CHECK(relative_error(xl.grad().slice(2, 0, frames), zero_padding(xs.grad(), test.lengths)) <
            1e-12);
      CHECK(max_abs(xl.grad().slice(2, frames, frames + 8)) == 0.0);
      CHECK(relative_error(wl.grad(), ws.grad()) < 1e-12);
      CHECK(relative_error(bl.grad(), bs.grad()) < 1e-12);
      CHECK(relative_error(rm_long, rm) < 1e-12);
      CHECK(relative_error(rv_long, rv) < 1e-12);
    }
  }
}

TEST_CASE("masked_batch_norm gradients in training and evaluation",
          "[ops][batch_norm][masked_batch_norm][grad]") {
  uint64_t seed = 1100;
  for (const MaskedBatchNormCase& test : masked_batch_norm_cases()) {
    if (test.large) continue;
    const int64_t c = test.x[1];
    const Tensor x = grad_input(test.x, ++seed, -2, 2);
    const Tensor w = grad_input({c}, ++seed, 0.5, 1.5), b = grad_input({c}, ++seed);
    const Tensor rm = grad_input({c}, ++seed).detach(),
                 rv = grad_input({c}, ++seed, 0.5, 2).detach();
    for (bool training : {true, false}) {
      INFO(test.name << ", training " << training);
      const BatchNormOptions options{training, 0.1, 1e-5};
      require_gradients(
          [&](const std::vector<Tensor>& in) {
            return masked_batch_norm(in[0], lengths_of(test), in[1], in[2], rm.clone(), rv.clone(),
                                     options);
          },
          {x, w, b});
    }
  }
}

TEST_CASE("masked_batch_norm's f32 outputs and gradients agree with the f64 ones",
          "[ops][batch_norm][masked_batch_norm]") {
  uint64_t seed = 1200;
  for (const MaskedBatchNormCase& test : masked_batch_norm_cases()) {
    INFO(test.name);
    const int64_t c = test.x[1];
    const Tensor x = grad_input(test.x, ++seed, -2, 3);
    const Tensor w = grad_input({c}, ++seed, 0.5, 1.5), b = grad_input({c}, ++seed);
    const Tensor dy = grad_input(test.x, ++seed).detach();
    const Tensor x32 = grad_leaf(x.to(DType::f32)), w32 = grad_leaf(w.to(DType::f32)),
                 b32 = grad_leaf(b.to(DType::f32));
    const Tensor x64 = grad_leaf(x), w64 = grad_leaf(w), b64 = grad_leaf(b);
    const Tensor y32 = masked_batch_norm(x32, lengths_of(test), w32, b32, Tensor(), Tensor());
    const Tensor y64 = masked_batch_norm(x64, lengths_of(test), w64, b64, Tensor(), Tensor());
    sum(mul(y32, dy.to(DType::f32))).backward();
    sum(mul(y64, dy)).backward();
    CHECK(relative_error(y32.to(DType::f64), y64) < 1e-5);
    CHECK(relative_error(x32.grad().to(DType::f64), x64.grad()) < 1e-4);
    CHECK(relative_error(w32.grad().to(DType::f64), w64.grad()) < 1e-4);
    CHECK(relative_error(b32.grad().to(DType::f64), b64.grad()) < 1e-4);
  }
}

TEST_CASE("masked_batch_norm's SyncBatchNorm path agrees with the local one on one process",
          "[ops][batch_norm][masked_batch_norm]") {
  const MaskedBatchNormCase& test = masked_batch_norm_cases()[1];
  const int64_t c = test.x[1];
  const Tensor x = grad_input(test.x, 1300, -2, 3).detach();
  const Tensor w = grad_input({c}, 1301, 0.5, 1.5).detach(), b = grad_input({c}, 1302).detach();
  const Tensor dy = grad_input(test.x, 1303).detach();
  Tensor rm = zeros({c}, f64_options()), rv = ones({c}, f64_options());
  Tensor rm_sync = rm.clone(), rv_sync = rv.clone();
  const Tensor xa = grad_leaf(x), wa = grad_leaf(w), ba = grad_leaf(b);
  const Tensor xb = grad_leaf(x), wb = grad_leaf(w), bb = grad_leaf(b);
  const Tensor y = masked_batch_norm(xa, lengths_of(test), wa, ba, rm, rv);
  const Tensor y_sync = masked_batch_norm(xb, lengths_of(test), wb, bb, rm_sync, rv_sync, {},
                                          std::make_shared<OneProcessReducer>());
  sum(mul(y, dy)).backward();
  sum(mul(y_sync, dy)).backward();
  CHECK(relative_error(y_sync, y) < 1e-12);
  CHECK(relative_error(xb.grad(), xa.grad()) < 1e-12);
  CHECK(relative_error(wb.grad(), wa.grad()) < 1e-12);
  CHECK(relative_error(rm_sync, rm) < 1e-12);
  CHECK(relative_error(rv_sync, rv) < 1e-12);
}

TEST_CASE("masked_batch_norm rejects bad inputs with one sentence",
          "[ops][batch_norm][masked_batch_norm]") {
  const Tensor x = zeros({2, 3, 4, 5});
  const Tensor lengths = from_vector(std::vector<int64_t>{4, 2}, {2});
  CHECK_THROWS_WITH(masked_batch_norm(zeros({2, 3}), lengths, {}, {}, {}, {}),
                    Catch::Contains("x must have shape [N, C, T, *]"));
  CHECK_THROWS_WITH(masked_batch_norm(x, from_vector(std::vector<int64_t>{4}, {1}), {}, {}, {}, {}),
                    Catch::Contains("lengths must be integers [2]"));
  CHECK_THROWS_WITH(masked_batch_norm(x, Tensor(), {}, {}, {}, {}),
                    Catch::Contains("lengths must be integers [2]"));
  CHECK_THROWS_WITH(
      masked_batch_norm(x, from_vector(std::vector<int64_t>{5, 2}, {2}), {}, {}, {}, {}),
      Catch::Contains("length 5 of sample 0 is outside [0, 4]"));
  CHECK_THROWS_WITH(
      masked_batch_norm(x, from_vector(std::vector<int64_t>{0, 0}, {2}), {}, {}, {}, {}),
      Catch::Contains("training needs more than one valid value per channel"));
  CHECK_THROWS_WITH(masked_batch_norm(x, lengths, zeros({4}), {}, {}, {}),
                    Catch::Contains("weight must have shape [3]"));
  CHECK_THROWS_WITH(masked_batch_norm(x, lengths, {}, {}, {}, {}, {false, 0.1, 1e-5}),
                    Catch::Contains("evaluation mode needs running_mean and running_var"));
}

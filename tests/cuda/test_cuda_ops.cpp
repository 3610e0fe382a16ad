// CUDA against the CPU reference for the elementwise, reduction, linear-algebra and softmax
// ops, in f32, f16 and bf16, forward and backward.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>

#include "engine/ops.h"
#include "engine/ops/loss.h"
#include "tests/cases/elementwise_cases.h"
#include "tests/cases/linalg_cases.h"
#include "tests/cases/reduce_cases.h"
#include "tests/cases/softmax_cases.h"
#include "tests/cuda/f64_parity.h"
#include "tests/cuda/parity_util.h"

using namespace sonata;
using namespace sonata::testing;

namespace {

Tensor rhs(const BinaryCase& op, const Shape& shape, uint64_t seed) {
  return parity_input(shape, seed, op.rhs_low, op.rhs_high);
}

}  // namespace

TEST_CASE("binary ops match the CPU", "[cuda][elementwise]") {
  for (const BinaryCase& op : binary_cases()) {
    INFO(op.name);
    const ParityFunction f = [&](const std::vector<Tensor>& in) { return op.fn(in[0], in[1]); };
    require_parity(f, {parity_input({3, 4}, 1), rhs(op, {3, 4}, 2)});
    require_parity(f, {parity_input({3, 1, 4}, 3), rhs(op, {2, 4}, 4)});
    require_parity(f, {parity_input({}, 5, 0.6, 0.9), rhs(op, {3, 4}, 6)});
    require_parity(f, {rhs(op, {3, 4}, 7), parity_input({}, 8, 0.6, 0.9)});
    // Non-contiguous operands: a transpose and a step-2 slice.
    require_parity(
        [&](const std::vector<Tensor>& in) { return op.fn(in[0].t(), in[1].slice(0, 0, 6, 2)); },
        {parity_input({4, 3}, 9), rhs(op, {6, 4}, 10)});
    // Large enough for every launch path (grid-stride loops, vector loads, odd tails).
    require_parity(f, {parity_input({37, 1, 129}, 11), rhs(op, {65, 129}, 12)});
    require_parity(f, {parity_input({257, 131}, 13), rhs(op, {257, 131}, 14)});
  }
}

TEST_CASE("binary ops share the gradient on ties like the CPU", "[cuda][elementwise]") {
  // Equal operands everywhere: every element is a tie.
  const Tensor a = parity_input({4, 5}, 15);
  require_parity([](const std::vector<Tensor>& in) { return maximum(in[0], in[1]); },
                 {a, a.detach().clone().set_requires_grad(true)});
  require_parity([](const std::vector<Tensor>& in) { return minimum(in[0], in[1]); },
                 {a, a.detach().clone().set_requires_grad(true)});
}

TEST_CASE("unary ops match the CPU", "[cuda][elementwise]") {
  for (const UnaryCase& op : unary_cases()) {
    INFO(op.name);
    const ParityFunction f = [&](const std::vector<Tensor>& in) { return op.fn(in[0]); };
    require_parity(f, {parity_input({3, 5}, 21, op.low, op.high)});
    require_parity([&](const std::vector<Tensor>& in) { return op.fn(in[0].t()); },
                   {parity_input({4, 3}, 22, op.low, op.high)});
    require_parity([&](const std::vector<Tensor>& in) { return op.fn(in[0].slice(1, 1, 8, 2)); },
                   {parity_input({3, 8}, 23, op.low, op.high)});
    require_parity(f, {parity_input({301, 67}, 24, op.low, op.high)});
  }
}

TEST_CASE("where and masked_fill match the CPU", "[cuda][elementwise]") {
  const Tensor cond = bool_input({1, 0, 0, 1, 1, 0}, {3, 1, 2});
  require_parity([](const std::vector<Tensor>& in) { return where(in[0], in[1], in[2]); },
                 {cond, parity_input({4, 1}, 31), parity_input({2}, 32)});
  require_parity([](const std::vector<Tensor>& in) { return where(in[0], in[1], in[2].t()); },
                 {cond, parity_input({}, 33), parity_input({2, 4}, 34)});
  require_parity([](const std::vector<Tensor>& in) { return masked_fill(in[1], in[0], -7.0); },
                 {cond, parity_input({3, 4, 2}, 35)});
  // A condition computed on the device from the (rounded) input itself.
  require_parity(
      [](const std::vector<Tensor>& in) {
        return where(gt(in[0], zeros({}, in[0].options())), in[0], mul(in[0], in[0]));
      },
      {parity_input({63, 65}, 36)});
}

TEST_CASE("comparisons match the CPU", "[cuda][elementwise]") {
  // Values on a coarse grid so that ties occur and survive rounding to every dtype.
  const Tensor a = from_vector(std::vector<float>{0, 0.5, 1, -1, 0.5, 2, 1, 0}, {2, 4});
  const Tensor b = from_vector(std::vector<float>{0.5, 0.5, 0, 1}, {4});
  for (const ComparisonCase& op : comparison_cases()) {
    INFO(op.name);
    require_parity(
        [&op](const std::vector<Tensor>& in) {
          const Tensor out = op.fn(in[0], in[1]);
          REQUIRE(out.dtype() == DType::boolean);
          return out.to(DType::f32);
        },
        {a, b}, false);
  }
}

TEST_CASE("reductions match the CPU", "[cuda][reduce]") {
  for (const ReduceDimsCase& c : reduce_dims_cases()) {
    for (bool keepdim : {false, true}) {
      INFO(c.name << (keepdim ? " keepdim" : ""));
      const Tensor x = parity_input({3, 4, 5}, 41);
      for (const ReductionCase& r : reduction_cases()) {
        INFO(r.name);
        require_parity([&](const std::vector<Tensor>& in) { return r.fn(in[0], c.dims, keepdim); },
                       {x});
      }
    }
  }
}

TEST_CASE("reductions of large and non-contiguous inputs", "[cuda][reduce]") {
  // Rows longer than a block, many rows, and a reduction over the outer dim (strided reads).
  // Positive inputs keep these long sums well-conditioned: the devices add in different
  // orders, and a sum that cancels to near zero would turn f32 rounding into a large relative
  // error that says nothing about the kernel.
  const Tensor wide = parity_input({7, 3001}, 42, 0.5, 1.5);
  const Tensor tall = parity_input({2049, 9}, 43, 0.5, 1.5);
  for (const Tensor& x : {wide, tall}) {
    INFO(shape_str(x.shape()));
    for (int64_t dim : {0, 1}) {
      INFO("dim " << dim);
      require_parity([&](const std::vector<Tensor>& in) { return sum(in[0], {dim}); }, {x});
      require_parity([&](const std::vector<Tensor>& in) { return var(in[0], {dim}); }, {x});
      require_parity([&](const std::vector<Tensor>& in) { return amax(in[0], {dim}); }, {x});
      require_parity([&](const std::vector<Tensor>& in) { return sonata::max(in[0], dim).first; },
                     {x});
    }
    require_parity([](const std::vector<Tensor>& in) { return mean(in[0]); }, {x});
  }
  const Tensor x = parity_input({4, 3, 6}, 44);
  require_parity(
      [](const std::vector<Tensor>& in) {
        return sum(in[0].permute({2, 0, 1}), {1, 2});
      },
      {x});
  require_parity([](const std::vector<Tensor>& in) { return amax(in[0].slice(2, 0, 6, 2), {0}); },
                 {x});
}

TEST_CASE("amax shares ties and max picks the first index", "[cuda][reduce]") {
  // Rows of repeated values: ties in every dtype.
  Tensor x =
      from_vector(std::vector<float>{1, 3, 3, 2, 2, 2, -1, 0.5, 0.5, 0.5, 0.25, 0.5}, {4, 3});
  x.set_requires_grad(true);
  require_parity([](const std::vector<Tensor>& in) { return amax(in[0], {1}); }, {x});
  require_parity([](const std::vector<Tensor>& in) { return amax(in[0]); }, {x});
  require_parity([](const std::vector<Tensor>& in) { return sonata::max(in[0], 1).first; }, {x});
  require_parity([](const std::vector<Tensor>& in) { return sonata::max(in[0], 1).second; }, {x},
                 false);
  require_parity([](const std::vector<Tensor>& in) { return sonata::max(in[0], 0, true).second; },
                 {x}, false);
  // And random inputs, where bf16 rounding makes ties of its own.
  const Tensor r = parity_input({6, 33}, 45);
  for (int64_t dim : {0, 1, -1}) {
    INFO("dim " << dim);
    require_parity([&](const std::vector<Tensor>& in) { return sonata::max(in[0], dim).first; },
                   {r});
    require_parity([&](const std::vector<Tensor>& in) { return sonata::max(in[0], dim).second; },
                   {r}, false);
  }
}

TEST_CASE("sum_to matches the CPU", "[cuda][reduce]") {
  const Tensor x = parity_input({2, 3, 4}, 46);
  for (const Shape& target : sum_to_targets()) {
    INFO(shape_str(target));
    require_parity([&](const std::vector<Tensor>& in) { return sum_to(in[0], target); }, {x});
  }
}

TEST_CASE("matmul matches the CPU", "[cuda][linalg]") {
  uint64_t seed = 50;
  for (const MatmulCase& c : matmul_cases()) {
    INFO(shape_str(c.a) << " @ " << shape_str(c.b));
    require_parity([](const std::vector<Tensor>& in) { return matmul(in[0], in[1]); },
                   {parity_input(c.a, ++seed), parity_input(c.b, ++seed)});
  }
  // Transposed and strided operands.
  require_parity([](const std::vector<Tensor>& in) { return matmul(in[0].t(), in[1].t()); },
                 {parity_input({4, 3}, 61), parity_input({2, 4}, 62)});
  require_parity(
      [](const std::vector<Tensor>& in) { return matmul(in[0].slice(0, 0, 6, 2), in[1]); },
      {parity_input({6, 4}, 63), parity_input({4, 2}, 64)});
}

TEST_CASE("bmm matches the CPU", "[cuda][linalg]") {
  require_parity([](const std::vector<Tensor>& in) { return bmm(in[0], in[1]); },
                 {parity_input({2, 3, 4}, 71), parity_input({2, 4, 2}, 72)});
  require_parity(
      [](const std::vector<Tensor>& in) {
        return bmm(in[0].transpose(1, 2), in[1].permute({0, 2, 1}));
      },
      {parity_input({2, 4, 3}, 73), parity_input({2, 2, 4}, 74)});
  require_parity(
      [](const std::vector<Tensor>& in) {
        return bmm(in[0].permute({2, 0, 1}), in[1]);
      },
      {parity_input({3, 4, 2}, 75), parity_input({2, 4, 2}, 76)});
  require_parity([](const std::vector<Tensor>& in) { return bmm(in[0], in[1]); },
                 {parity_input({5, 33, 40}, 77), parity_input({5, 40, 31}, 78)});
}

TEST_CASE("addmm matches the CPU", "[cuda][linalg]") {
  uint64_t seed = 80;
  for (const AddmmCase& c : addmm_cases()) {
    INFO("bias " << shape_str(c.bias) << " beta " << c.beta << " alpha " << c.alpha);
    require_parity(
        [&](const std::vector<Tensor>& in) { return addmm(in[0], in[1], in[2], c.beta, c.alpha); },
        {parity_input(c.bias, ++seed), parity_input({3, 4}, ++seed), parity_input({4, 2}, ++seed)});
  }
  require_parity(
      [](const std::vector<Tensor>& in) { return addmm(in[0], in[1].t(), in[2].t(), 0.5, 2.0); },
      {parity_input({2}, 91), parity_input({4, 3}, 92), parity_input({2, 4}, 93)});
  require_parity([](const std::vector<Tensor>& in) { return addmm(in[0], in[1], in[2]); },
                 {parity_input({37}, 94), parity_input({70, 50}, 95), parity_input({50, 37}, 96)});
}

TEST_CASE("softmax and log_softmax match the CPU", "[cuda][softmax]") {
  const Tensor x = parity_input({3, 4, 5}, 101, -3, 3);
  for (int64_t dim : softmax_dims()) {
    INFO("dim " << dim);
    for (const SoftmaxCase& op : softmax_cases()) {
      INFO(op.name);
      require_parity([&](const std::vector<Tensor>& in) { return op.fn(in[0], dim); }, {x});
    }
  }
  require_parity([](const std::vector<Tensor>& in) { return softmax(in[0].t(), -1); },
                 {parity_input({5, 3}, 102, -3, 3)});
  require_parity(
      [](const std::vector<Tensor>& in) { return log_softmax(in[0].slice(0, 0, 5, 2), 1); },
      {parity_input({5, 3}, 103, -3, 3)});
  // Rows longer than a block, many short rows, and a long strided (outer-dim) softmax.
  for (const Shape& shape : {Shape{3, 5000}, Shape{1000, 7}, Shape{2, 700, 3}}) {
    INFO(shape_str(shape));
    const Tensor big = parity_input(shape, 104, -3, 3);
    require_parity([](const std::vector<Tensor>& in) { return softmax(in[0], 1); }, {big});
    require_parity([](const std::vector<Tensor>& in) { return log_softmax(in[0], 1); }, {big});
  }
  // Rows whole in 16-byte packs (64 and 4096: multiples of 8 halves, 4 floats) as warp and
  // block rows, an odd length beside them (elementwise), and the same rows through a view one
  // element into its storage: contiguous but misaligned, so the kernels fall back to elements.
  for (const Shape& shape : {Shape{5, 64}, Shape{3, 4096}, Shape{5, 67}}) {
    INFO("packed rows " << shape_str(shape));
    const Tensor rows = parity_input(shape, 106, -3, 3);
    require_parity([](const std::vector<Tensor>& in) { return softmax(in[0], 1); }, {rows});
    require_parity([](const std::vector<Tensor>& in) { return log_softmax(in[0], 1); }, {rows});
    const Tensor storage = parity_input({1 + shape_numel(shape)}, 107, -3, 3);
    for (bool log : {false, true})
      require_parity(
          [&](const std::vector<Tensor>& in) {
            const Tensor view = in[0].slice(0, 1, 1 + shape_numel(shape)).view(shape);
            REQUIRE(view.is_contiguous());
            if (!view.device().is_cpu())
              REQUIRE(reinterpret_cast<uintptr_t>(view.data_ptr()) % 16 != 0);
            return log ? log_softmax(view, 1) : softmax(view, 1);
          },
          {storage});
  }
  // A huge logit must not overflow in any dtype (1e4 rounds to 9984 in bf16, same on both).
  Tensor huge = from_vector(std::vector<float>{1e4f, 0, -1e4f, 1}, {1, 4});
  huge.set_requires_grad(true);
  require_parity([](const std::vector<Tensor>& in) { return log_softmax(in[0], 1); }, {huge});
  require_parity([](const std::vector<Tensor>& in) { return softmax(in[0], 1); }, {huge});
}

TEST_CASE("log_softmax of equal huge values keeps the digits of log(2)", "[cuda][softmax]") {
  // Rows of two equal scores: every log-probability is -log(2). In float, x - (1e4 + log(2))
  // gives -0.69336, off by 3e-4 relative (the f32 tolerance is 1e-4), so the parity check
  // against the CPU fails unless the max and log(sum) are subtracted one after the other.
  const std::vector<float> values = {1e4f, 1e4f, -1e4f, -1e4f, 3e4f, 3e4f, 0.5f, 0.5f};
  Tensor rows = from_vector(values, {4, 2});
  rows.set_requires_grad(true);
  require_parity([](const std::vector<Tensor>& in) { return log_softmax(in[0], 1); }, {rows});
  require_parity([](const std::vector<Tensor>& in) { return softmax(in[0], 1); }, {rows});
  // The column layout (inner > 1), and f64, where 1e10 + log(2) rounds in double too.
  require_parity([](const std::vector<Tensor>& in) { return log_softmax(in[0].t(), 0); }, {rows});
  Tensor huge = from_vector(std::vector<double>{1e10, 1e10, 1e4, 1e4}, {2, 2},
                            TensorOptions{}.with(DType::f64));
  huge.set_requires_grad(true);
  for (int64_t dim : {0, 1}) {
    INFO("dim " << dim);
    require_f64_parity([&](const std::vector<Tensor>& in) { return log_softmax(in[0], dim); },
                       {huge});
  }
  // And by value, not only against the CPU.
  for (DType dtype : {DType::f32, DType::f64}) {
    INFO(dtype_name(dtype));
    const Tensor x = rows.detach().to(dtype).to(Device::cuda());
    for (double v : log_softmax(x, 1).to(Device::cpu()).to_vector<double>())
      CHECK(v == Approx(-std::log(2.0)).epsilon(1e-7));
  }
}

TEST_CASE("reductions split across blocks match the CPU", "[cuda][reduce]") {
  // Few long lines take the split path (kernels/common/line_split.h): a whole-tensor sum and
  // rows of odd length (pieces of unequal size), and column sums of tall blocks (one and
  // three 32-line tiles, 7 and 40 lines: a partial tile). Positive values for well-
  // conditioned sums, small enough that every sum stays far inside f16's range (65504).
  const Tensor row = parity_input({1, 300001}, 47, 0.05, 0.15);
  const Tensor rows = parity_input({3, 100003}, 48, 0.05, 0.15);
  const Tensor tall = parity_input({50001, 7}, 49, 0.05, 0.15);
  const Tensor block = parity_input({2, 20011, 40}, 50, 0.05, 0.15);
  struct Case {
    Tensor x;
    int64_t dim;
  };
  for (const Case& c : {Case{row, 1}, Case{rows, 1}, Case{tall, 0}, Case{block, 1}}) {
    INFO(shape_str(c.x.shape()) << " dim " << c.dim);
    const int64_t dim = c.dim;
    require_parity([&](const std::vector<Tensor>& in) { return sum(in[0], {dim}); }, {c.x});
    require_parity([&](const std::vector<Tensor>& in) { return amax(in[0], {dim}); }, {c.x});
    require_parity([&](const std::vector<Tensor>& in) { return sonata::max(in[0], dim).first; },
                   {c.x});
    require_parity([&](const std::vector<Tensor>& in) { return sonata::max(in[0], dim).second; },
                   {c.x}, false);
    require_parity([&](const std::vector<Tensor>& in) { return mean(in[0], {dim}); }, {c.x});
    require_f64_parity([&](const std::vector<Tensor>& in) { return sum(in[0], {dim}); }, {c.x});
  }
  // Whole-tensor reductions: one row of every element.
  require_parity([](const std::vector<Tensor>& in) { return sum(in[0]); }, {tall});
  require_parity([](const std::vector<Tensor>& in) { return mean(in[0]); }, {row});
}

TEST_CASE("split reductions give the same bits every run", "[cuda][reduce]") {
  for (DType dtype : {DType::f32, DType::f16, DType::f64}) {
    INFO(dtype_name(dtype));
    const Tensor x = parity_input({1, 500009}, 51, -1, 1, false).to(dtype).to(Device::cuda());
    const Tensor columns = parity_input({40000, 5}, 52, -1, 1, false).to(dtype).to(Device::cuda());
    const std::vector<double> first = sum(x).to(Device::cpu()).to_vector<double>();
    const std::vector<double> first_columns =
        sum(columns, {0}).to(Device::cpu()).to_vector<double>();
    for (int run = 0; run < 3; ++run) {
      CHECK(sum(x).to(Device::cpu()).to_vector<double>() == first);
      CHECK(sum(columns, {0}).to(Device::cpu()).to_vector<double>() == first_columns);
    }
  }
}

TEST_CASE("a split max finds the first maximum and NaN in any piece", "[cuda][reduce]") {
  // One row of 200000 zeros (25 pieces of 8 K): ties far apart must give the first index,
  // whichever piece holds it, and a NaN late in the row must win.
  std::vector<float> values(200000, 0.0f);
  values[150000] = 2.0f;
  values[20000] = 2.0f;
  values[199999] = 2.0f;
  const Tensor ties = from_vector(values, {1, 200000}).to(Device::cuda());
  const auto [value, index] = sonata::max(ties, 1);
  CHECK(value.to(Device::cpu()).to_vector<double>()[0] == 2.0);
  CHECK(index.to(Device::cpu()).to_vector<int64_t>()[0] == 20000);
  values[180001] = std::nanf("");
  const Tensor with_nan = from_vector(values, {1, 200000}).to(Device::cuda());
  CHECK(std::isnan(amax(with_nan, {1}).to(Device::cpu()).to_vector<double>()[0]));
  CHECK(sonata::max(with_nan, 1).second.to(Device::cpu()).to_vector<int64_t>()[0] == 180001);
  // Columns: [100000, 3], the maximum of column 1 twice, in different pieces.
  std::vector<float> grid(300000, 0.0f);
  grid[size_t(90000 * 3 + 1)] = 5.0f;
  grid[size_t(1000 * 3 + 1)] = 5.0f;
  const auto column_max = sonata::max(from_vector(grid, {100000, 3}).to(Device::cuda()), 0);
  CHECK(column_max.second.to(Device::cpu()).to_vector<int64_t>()[1] == 1000);
}

TEST_CASE("one-pass softmax statistics keep the special values and rescales",
          "[cuda][softmax][cross_entropy]") {
  // Rows that make the online max / exp-sum rescale at every element (rising), never
  // (falling), and the special values of the two-pass form: NaN, +inf, all -inf, -inf beside
  // finite values. As rows (warp per row), one long row (block), and columns.
  const float inf = std::numeric_limits<float>::infinity(), nan = std::nanf("");
  const Tensor specials = from_vector(
      std::vector<float>{-inf, -inf, -inf, 1, nan, 2, 1, inf, 2, -inf, 0, -inf}, {4, 3});
  for (int64_t dim : {0, 1}) {
    INFO("dim " << dim);
    require_parity([&](const std::vector<Tensor>& in) { return softmax(in[0], dim); }, {specials},
                   false);
    require_parity([&](const std::vector<Tensor>& in) { return log_softmax(in[0], dim); },
                   {specials}, false);
  }
  for (int64_t n : {int64_t(37), int64_t(3001)}) {
    INFO("length " << n);
    const Tensor rising = mul(arange(0, double(n), 1).to(DType::f32), 0.01).unsqueeze(0);
    const Tensor falling = mul(rising, -1.0);
    Tensor both = cat({rising, falling, parity_input({1, n}, 105, -3, 3, false)}, 0).detach();
    both.set_requires_grad(true);
    require_parity([](const std::vector<Tensor>& in) { return softmax(in[0], 1); }, {both});
    require_parity([](const std::vector<Tensor>& in) { return log_softmax(in[0].t(), 0); }, {both});
    require_parity(
        [](const std::vector<Tensor>& in) {
          return cross_entropy(in[0], index_input({0, 1, 2}, {3}), Tensor(), {Reduction::none});
        },
        {both});
  }
}

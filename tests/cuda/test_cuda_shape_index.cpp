// CUDA against the CPU reference for views, copies, casts, joining and indexing (the index ops
// over the tables in tests/cases/index_cases.h), in f32, f16 and bf16, forward and backward.
#include <catch2/catch.hpp>

#include "base/determinism.h"
#include "engine/ops.h"
#include "tests/cases/index_cases.h"
#include "tests/cases/view_cases.h"
#include "tests/cuda/parity_util.h"

using namespace sonata;
using namespace sonata::testing;

namespace {

// Sets deterministic_algorithms() for one scope.
class DeterminismScope {
 public:
  explicit DeterminismScope(bool on) : previous_(deterministic_algorithms()) {
    set_deterministic_algorithms(on);
  }
  ~DeterminismScope() { set_deterministic_algorithms(previous_); }
  DeterminismScope(const DeterminismScope&) = delete;
  DeterminismScope& operator=(const DeterminismScope&) = delete;

 private:
  bool previous_;
};

std::vector<float> host_f32(const Tensor& t) {
  return t.to(Device::cpu()).to(DType::f32).to_vector<float>();
}

// index_select's input gradient (index_add) for a fixed upstream gradient.
Tensor index_add_through_select(const Tensor& x, const Tensor& rows, const Tensor& grad_y) {
  Tensor leaf = x.detach();
  leaf.set_requires_grad(true);
  index_select(leaf, 0, rows).backward(grad_y);
  return leaf.grad();
}

}  // namespace

// Each result is made contiguous on the device, so the strided copy kernel runs forward and
// the view's backward (zero-fill + strided copy, or a sum for expand) runs backward.
TEST_CASE("view ops match the CPU", "[cuda][shape]") {
  uint64_t seed = 200;
  for (const ViewCase& c : view_cases()) {
    INFO(c.name);
    require_parity([&](const std::vector<Tensor>& in) { return c.fn(in[0]).contiguous(); },
                   {parity_input(c.input, ++seed)});
  }
}

TEST_CASE("casts match the CPU", "[cuda][shape]") {
  const Tensor x = parity_input({5, 7}, 210, -3, 3);
  for (DType target : {DType::f32, DType::f64, DType::f16, DType::bf16}) {
    INFO("to " << dtype_name(target));
    require_parity([&](const std::vector<Tensor>& in) { return in[0].to(target); }, {x});
    require_parity([&](const std::vector<Tensor>& in) { return cast(in[0].t(), target); }, {x});
  }
  // Integer and bool casts truncate and test non-zero, without gradient.
  for (DType target : {DType::i64, DType::i32, DType::boolean}) {
    INFO("to " << dtype_name(target));
    require_parity([&](const std::vector<Tensor>& in) { return in[0].to(target).to(DType::f32); },
                   {x}, false);
  }
}

TEST_CASE("cat stack and split match the CPU", "[cuda][shape]") {
  require_parity([](const std::vector<Tensor>& in) { return cat(in, 0); },
                 {parity_input({1, 3}, 221), parity_input({2, 3}, 222), parity_input({3, 3}, 223)});
  require_parity(
      [](const std::vector<Tensor>& in) {
        return cat({in[0], in[1].t()}, -1);
      },
      {parity_input({3, 2}, 224), parity_input({4, 3}, 225)});
  require_parity([](const std::vector<Tensor>& in) { return cat(in, 1); },
                 {parity_input({2, 1, 2}, 226), parity_input({2, 3, 2}, 227, -1, 1, false)});
  require_parity([](const std::vector<Tensor>& in) { return cat(in, 1); },
                 {parity_input({63, 100}, 228), parity_input({63, 37}, 229)});
  for (int64_t dim : {0, 1, 2, -1}) {
    INFO("stack dim " << dim);
    require_parity([&](const std::vector<Tensor>& in) { return stack(in, dim); },
                   {parity_input({2, 3}, 230), parity_input({2, 3}, 231)});
  }
  // Only some pieces used downstream: the others' gradients are zero-filled on the device.
  require_parity(
      [](const std::vector<Tensor>& in) {
        const std::vector<Tensor> parts = split(in[0], std::vector<int64_t>{3, 1, 3}, -1);
        return mul(parts[0], parts[2]);
      },
      {parity_input({2, 7}, 232)});
  require_parity(
      [](const std::vector<Tensor>& in) {
        const std::vector<Tensor> parts = split(in[0].t(), 2, 0);
        return cat({parts[2], parts[0]}, 0);
      },
      {parity_input({3, 5}, 233)});
}

TEST_CASE("index_select gather and scatter_add match the CPU", "[cuda][index]") {
  uint64_t seed = 240;
  for (const IndexSelectCase& test : index_select_cases()) {
    INFO("index_select: " << test.name);
    require_parity(
        [&](const std::vector<Tensor>& in) {
          return index_select(test.input_of(in[0]), test.dim, in[1]);
        },
        {parity_input(test.x, ++seed), test.index_tensor()});
  }
  for (const GatherCase& test : gather_cases()) {
    INFO("gather: " << test.name);
    require_parity(
        [&](const std::vector<Tensor>& in) {
          return gather(test.input_of(in[0]), test.dim, in[1]);
        },
        {parity_input(test.x, ++seed), test.index_tensor()});
  }
  for (const ScatterAddCase& test : scatter_add_cases()) {
    INFO("scatter_add: " << test.name);
    const Tensor x = parity_input(test.x, ++seed), src = parity_input(test.src, ++seed);
    require_parity(
        [&](const std::vector<Tensor>& in) {
          return scatter_add(in[0], test.dim, in[2], test.src_of(in[1]));
        },
        {x, src, test.index_tensor()});
  }
}

TEST_CASE("index_add and scatter_add on CUDA accumulate f16 and bf16 in fp32", "[cuda][index]") {
  // 4096 ones into one element: a running sum kept in f16 stalls at 2048 and in bf16 at 256,
  // where the spacing of the type exceeds 1; in fp32 it is 4096, exact in both types.
  const int64_t n = 4096;
  for (DType dtype : {DType::f16, DType::bf16}) {
    for (bool deterministic : {false, true}) {
      INFO(dtype_name(dtype) << (deterministic ? ", deterministic" : ""));
      const DeterminismScope scope(deterministic);
      const TensorOptions on_cuda = TensorOptions{}.with(dtype).with(Device::cuda());
      const TensorOptions index_options = TensorOptions{}.with(DType::i64).with(Device::cuda());
      const Tensor grad_x = index_add_through_select(
          zeros({3, 2}, on_cuda), zeros({n}, index_options), ones({n, 2}, on_cuda));
      CHECK(host_f32(grad_x) == std::vector<float>{4096, 4096, 0, 0, 0, 0});
      const Tensor added = scatter_add(zeros({2, 3}, on_cuda), 1, full({2, n}, 1, index_options),
                                       ones({2, n}, on_cuda));
      CHECK(host_f32(added) == std::vector<float>{0, 4096, 0, 0, 4096, 0});
    }
  }
}

TEST_CASE("index_add and scatter_add under --deterministic equal the CPU bit for bit",
          "[cuda][index]") {
  // Many sources per target with random values: the order of the additions shows in the
  // last bits, so atomics (arrival order) differ from the CPU's sequential sum and from run
  // to run, while the ordered path repeats the CPU's additions exactly.
  const DeterminismScope scope(true);
  std::vector<int64_t> rows;
  for (int64_t i = 0; i < 3000; ++i) rows.push_back((i * 7) % 13);
  const Tensor row_index = index_input(rows, {3000});
  const Tensor x = parity_input({13, 40}, 260, -1, 1, false);
  const Tensor grad_y = parity_input({3000, 40}, 261, -1, 1, false);
  const std::vector<float> cpu_index_add =
      index_add_through_select(x, row_index, grad_y).to_vector<float>();
  std::vector<int64_t> targets;
  for (int64_t i = 0; i < 8 * 2048; ++i) targets.push_back((i * 5) % 64);
  const Tensor target_index = index_input(targets, {8, 2048});
  const Tensor base = parity_input({8, 64}, 262, -1, 1, false);
  const Tensor src = parity_input({8, 2048}, 263, -1, 1, false);
  const std::vector<float> cpu_scatter = scatter_add(base, 1, target_index, src).to_vector<float>();
  for (int run = 0; run < 2; ++run) {
    INFO("run " << run);
    const Tensor grad_x = index_add_through_select(
        x.to(Device::cuda()), row_index.to(Device::cuda()), grad_y.to(Device::cuda()));
    CHECK(host_f32(grad_x) == cpu_index_add);
    const Tensor added = scatter_add(base.to(Device::cuda()), 1, target_index.to(Device::cuda()),
                                     src.to(Device::cuda()));
    CHECK(host_f32(added) == cpu_scatter);
  }
  // Out-of-range indices on the device add nothing on the ordered path either.
  const Tensor skipped =
      scatter_add(zeros({1, 2}, TensorOptions{}.with(Device::cuda())), 1,
                  index_input({0, 5, -1, 1}, {1, 4}).to(Device::cuda()),
                  from_vector(std::vector<float>{1, 2, 4, 8}, {1, 4}).to(Device::cuda()));
  CHECK(host_f32(skipped) == std::vector<float>{1, 8});
}

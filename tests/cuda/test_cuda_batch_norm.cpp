// batch_norm / batch_norm_relu on CUDA against the CPU reference, f32 / f16 / bf16: outputs,
// updated running stats and gradients of x, weight and bias, over shapes that take the packed
// and the scalar paths and the split (multi-block) channel reductions, by planes and by
// columns ([rows, channels]: BatchNorm1d and channels-last).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "engine/ops.h"
#include "engine/ops/batch_norm.h"
#include "engine/ops/memory_format.h"
#include "tests/cases/batch_norm_cases.h"
#include "tests/cuda/parity_util.h"

using namespace sonata;
using namespace sonata::testing;

namespace {

// The output followed by the running stats the call updated, as one f32 vector.
Tensor output_and_running_stats(const std::vector<Tensor>& in, bool relu,
                                const BatchNormOptions& options) {
  const Tensor y = relu ? batch_norm_relu(in[0], in[1], in[2], in[3], in[4], options)
                        : batch_norm(in[0], in[1], in[2], in[3], in[4], options);
  return cat({y.to(DType::f32).flatten(), in[3].to(DType::f32), in[4].to(DType::f32)}, 0);
}

}  // namespace

TEST_CASE("cuda batch_norm matches the CPU in training and evaluation", "[cuda][batch_norm]") {
  uint64_t seed = 100;
  for (const BatchNormCase& test : batch_norm_cases()) {
    const Shape& shape = test.x;
    const int64_t c = shape[1];
    const Tensor x = parity_input(shape, ++seed, -1, 3);
    const Tensor w = parity_input({c}, ++seed, 0.5, 1.5), b = parity_input({c}, ++seed);
    const Tensor rm = parity_input({c}, ++seed, -0.5, 0.5, false);
    const Tensor rv = parity_input({c}, ++seed, 0.5, 2, false);
    for (bool training : {true, false})
      for (bool relu : {false, true}) {
        INFO("shape " << shape_str(shape) << " training " << training << " relu " << relu);
        const BatchNormOptions options{training, 0.1, 1e-5};
        require_parity(
            [&](const std::vector<Tensor>& in) {
              return output_and_running_stats(in, relu, options);
            },
            {x, w, b, rm, rv});
      }
  }
}

TEST_CASE("cuda batch_norm without affine parameters", "[cuda][batch_norm]") {
  const Tensor x = parity_input({8, 4, 6, 6}, 201, -2, 2);
  require_parity(
      [](const std::vector<Tensor>& in) {
        return batch_norm(in[0], Tensor(), Tensor(), Tensor(), Tensor());
      },
      {x});
}

TEST_CASE("cuda batch_norm with f32 parameters beside half activations", "[cuda][batch_norm]") {
  const Tensor x = parity_input({4, 8, 10, 10}, 211, -1, 1, false);
  const Tensor w = parity_input({8}, 212, 0.5, 1.5, false),
               b = parity_input({8}, 213, -1, 1, false);
  for (DType dtype : {DType::f16, DType::bf16}) {
    INFO(dtype_name(dtype));
    Tensor rm_cpu = zeros({8}), rv_cpu = ones({8});
    const Tensor reference = batch_norm(x.to(dtype).to(DType::f32), w, b, rm_cpu, rv_cpu);
    Tensor rm = zeros({8}, TensorOptions{}.with(Device::cuda()));
    Tensor rv = ones({8}, TensorOptions{}.with(Device::cuda()));
    const Tensor xh = x.to(dtype).to(Device::cuda());
    const Tensor y = batch_norm(xh, w.to(Device::cuda()), b.to(Device::cuda()), rm, rv);
    CHECK(y.dtype() == dtype);
    const Tolerance tolerance = parity_tolerance(dtype);
    const ParityResult out =
        compare_tensors(y.to(DType::f32).to(Device::cpu()), reference, tolerance, "y");
    INFO(out.report);
    CHECK(out.ok);
    const ParityResult stats =
        compare_tensors(rv.to(Device::cpu()), rv_cpu, tolerance, "running_var");
    INFO(stats.report);
    CHECK(stats.ok);
  }
}

TEST_CASE("batch_norm on channels-last input matches the CPU", "[cuda][batch_norm][layout]") {
  // Channels-last reaches the kernels as [N * H * W, C, 1]: the column kernels, with channel
  // vectors of 16 or 8 bytes or single elements by C, split over runs for the larger cases.
  uint64_t seed = 2000;
  for (const BatchNormCase& test : batch_norm_cases()) {
    const Shape& shape = test.x;
    if (shape.size() != 4) continue;
    const int64_t c = shape[1];
    const Tensor x = parity_input(shape, ++seed, -1, 3);
    const Tensor w = parity_input({c}, ++seed, 0.5, 1.5), b = parity_input({c}, ++seed);
    const Tensor rm = parity_input({c}, ++seed, -0.5, 0.5, false);
    const Tensor rv = parity_input({c}, ++seed, 0.5, 2, false);
    for (bool training : {true, false}) {
      INFO(test.name << ": shape " << shape_str(shape) << " training " << training);
      const BatchNormOptions options{training, 0.1, 1e-5};
      require_parity(
          [&](const std::vector<Tensor>& in) {
            const Tensor y =
                batch_norm_relu(to_channels_last(in[0]), in[1], in[2], in[3], in[4], options);
            REQUIRE(is_channels_last(y));
            return cat({y.to(DType::f32).flatten(), in[3].to(DType::f32), in[4].to(DType::f32)}, 0);
          },
          {x, w, b, rm, rv});
    }
  }
}

TEST_CASE("cuda batch_norm columns through a misaligned view match the CPU", "[cuda][batch_norm]") {
  // [rows, 64] one element into its storage: contiguous, 64 channels make whole 16-byte packs,
  // but the pointer is not aligned to one, so the kernels take single elements.
  const Shape shape{96, 64};
  const int64_t numel = shape_numel(shape);
  const Tensor storage = parity_input({1 + numel}, 2101, -1, 3);
  const Tensor w = parity_input({64}, 2102, 0.5, 1.5), b = parity_input({64}, 2103);
  require_parity(
      [&](const std::vector<Tensor>& in) {
        const Tensor view = in[0].slice(0, 1, 1 + numel).view(shape);
        REQUIRE(view.is_contiguous());
        if (!view.device().is_cpu())
          REQUIRE(reinterpret_cast<uintptr_t>(view.data_ptr()) % 16 != 0);
        return batch_norm_relu(view, in[1], in[2], Tensor(), Tensor());
      },
      {storage, w, b});
}

TEST_CASE("cuda batch_norm statistics of columns far from zero match the CPU",
          "[cuda][batch_norm]") {
  // Channels with means of 1e3 and 1e4 and a spread of about 1: sums of squares about zero
  // would lose every digit of the variance in float; sums shifted by a value of the channel
  // keep them. Eval-mode statistics are not involved: the output is normalised by the batch's.
  const int64_t rows = 512, channels = 8;
  std::vector<double> values(size_t(rows * channels));
  const Tensor noise = parity_input({rows, channels}, 2201, -1, 1, false).to(DType::f64);
  const std::vector<double> spread = noise.to_vector<double>();
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < channels; ++c)
      values[size_t(r * channels + c)] = (c % 2 ? 1e4 : 1e3) + spread[size_t(r * channels + c)];
  const Tensor x = from_vector(values, {rows, channels}, TensorOptions{}.with(DType::f64));
  const Tensor on_cpu = batch_norm(x.to(DType::f32), Tensor(), Tensor(), Tensor(), Tensor());
  const Tensor on_cuda =
      batch_norm(x.to(DType::f32).to(Device::cuda()), Tensor(), Tensor(), Tensor(), Tensor());
  const ParityResult result =
      compare_tensors(on_cuda.to(Device::cpu()), on_cpu, parity_tolerance(DType::f32), "y");
  INFO(result.report);
  CHECK(result.ok);
}

TEST_CASE("cuda batch_norm + ReLU keeps NaN like the CPU", "[cuda][batch_norm]") {
  // ReLU(NaN) = NaN (PyTorch): a NaN must reach the loss. Evaluation mode, so the NaN does
  // not spread through its channel's mean; one NaN in the first and one in the last plane.
  // The parity check alone would pass if both sides turned NaN into 0: the NaN is checked
  // on the CUDA output itself too.
  uint64_t seed = 3000;
  for (const BatchNormCase& test : batch_norm_cases()) {
    const Shape& shape = test.x;
    const int64_t c = shape[1];
    std::vector<double> values =
        parity_input(shape, ++seed, -1, 3, false).to(DType::f64).to_vector<double>();
    const size_t first = 0, last = values.size() - 1;
    values[first] = values[last] = std::numeric_limits<double>::quiet_NaN();
    const Tensor x = from_vector(values, shape, TensorOptions{}.with(DType::f64)).to(DType::f32);
    const Tensor w = parity_input({c}, ++seed, 0.5, 1.5, false),
                 b = parity_input({c}, ++seed, -1, 1, false);
    const Tensor rm = parity_input({c}, ++seed, -0.5, 0.5, false);
    const Tensor rv = parity_input({c}, ++seed, 0.5, 2, false);
    const BatchNormOptions options{false, 0.1, 1e-5};
    INFO("shape " << shape_str(shape));
    for (DType dtype : kParityDTypes) {
      INFO("dtype " << dtype_name(dtype));
      const auto on_cuda = [&](const Tensor& t, DType type) {
        return t.to(type).to(Device::cuda());
      };
      const Tensor y =
          batch_norm_relu(on_cuda(x, dtype), on_cuda(w, DType::f32), on_cuda(b, DType::f32),
                          on_cuda(rm, DType::f32), on_cuda(rv, DType::f32), options)
              .to(DType::f64)
              .to(Device::cpu())
              .contiguous();
      const std::vector<double> out = y.to_vector<double>();
      CHECK(std::isnan(out[first]));
      CHECK(std::isnan(out[last]));
    }
    require_parity(
        [&](const std::vector<Tensor>& in) {
          return batch_norm_relu(in[0], in[1], in[2], in[3], in[4], options).to(DType::f32);
        },
        {x, w, b, rm, rv}, /*backward=*/false);
  }
}

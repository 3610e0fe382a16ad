// The kernel benchmark's accounting (bench/kernel_cost.h): bytes and flops of small
// shapes counted by hand from the tensors each pass reads and writes, output sizes against
// a brute-force walk of the window and against conv2d itself, and the floor and rotation
// rules on round numbers.
#include <catch2/catch.hpp>

#include "base/error.h"
#include "bench/kernel_cost.h"
#include "engine/ops/conv.h"

using namespace sonata;
using namespace sonata::bench;

TEST_CASE("GEMM cost counts both operands and the result, and two GEMMs backward",
          "[core][bench]") {
  // A 2x4, B 4x3, C 2x3 in f32: 8 + 12 + 6 elements; 2 * 2*3*4 flops.
  const KernelCost forward = gemm_cost(2, 3, 4, 4, Pass::forward);
  CHECK(forward.bytes == 4 * (8 + 12 + 6));
  CHECK(forward.flops == 48);
  // Backward reads dC, A, B (6 + 8 + 12) and writes dA, dB (8 + 12): dA = dC B^T and
  // dB = A^T dC are 2*2*4*3 flops each.
  const KernelCost backward = gemm_cost(2, 3, 4, 4, Pass::backward);
  CHECK(backward.bytes == 4 * (6 + 8 + 12 + 8 + 12));
  CHECK(backward.flops == 96);
}

TEST_CASE("conv output sizes match a walk of the window and conv2d's own output", "[core][bench]") {
  for (int64_t h : {5, 6, 7, 12})
    for (int64_t r : {1, 3, 5})
      for (int64_t stride : {1, 2, 3})
        for (int64_t padding : {0, 1, 2}) {
          if (r > h + 2 * padding) continue;
          // Windows start at -padding and step by stride while they end inside the padding.
          int64_t windows = 0;
          for (int64_t start = -padding; start + r <= h + padding; start += stride) ++windows;
          const ConvShape shape{1, 1, h, h + 1, 1, r, r, stride, padding};
          CHECK(shape.p() == windows);
          Conv2dParams params;
          params.stride = {stride, stride};
          params.padding = {padding, padding};
          const Tensor y = conv2d(zeros({1, 1, h, h + 1}), zeros({1, 1, r, r}), Tensor(), params);
          CHECK(y.size(2) == shape.p());
          CHECK(y.size(3) == shape.q());
        }
}

TEST_CASE("conv cost counts every tap of every output, padding included", "[core][bench]") {
  // x 1x2x5x5 (50), w 3x2x3x3 (54), stride 2 padding 1: y 1x3x3x3 (27), each output a sum
  // over 2*3*3 = 18 taps: 486 multiply-adds. f16: 2 bytes an element.
  const ConvShape shape{1, 2, 5, 5, 3, 3, 3, 2, 1};
  const KernelCost forward = conv2d_cost(shape, 2, Pass::forward);
  CHECK(forward.bytes == 2 * (50 + 54 + 27));
  CHECK(forward.flops == 2 * 486);
  // Backward reads dy, x, w and writes dx, dw.
  const KernelCost backward = conv2d_cost(shape, 2, Pass::backward);
  CHECK(backward.bytes == 2 * (27 + 50 + 54 + 50 + 54));
  CHECK(backward.flops == 4 * 486);
}

TEST_CASE("element-wise, loss and optimizer costs count the tensors they move", "[core][bench]") {
  // BN + ReLU on 100 f32 values in 4 channels: x in, y out, and six f32 vectors of 4
  // (weight, bias, running mean and var read, both running stats written).
  CHECK(batch_norm_relu_cost(100, 4, 4, Pass::forward).bytes == 4 * 200 + 4 * 6 * 4);
  // Backward: dy and x in, dx out; weight in, dweight and dbias out.
  CHECK(batch_norm_relu_cost(100, 4, 4, Pass::backward).bytes == 4 * 300 + 4 * 3 * 4);

  // Cross-entropy over 3 x 5 bf16 logits with 3 i64 targets and one f32 loss.
  CHECK(softmax_cross_entropy_cost(3, 5, 2, Pass::forward).bytes == 2 * 15 + 8 * 3 + 4);
  CHECK(softmax_cross_entropy_cost(3, 5, 2, Pass::backward).bytes == 2 * 15 * 2 + 8 * 3);

  // LSTM step, batch 2, input 3, hidden 4, f32: W_ih 16x3, W_hh 16x4 (112), two biases of
  // 16, x 2x3, h and c 2x4 in, h and c out.
  const KernelCost lstm = lstm_step_cost(2, 3, 4, 4, Pass::forward);
  CHECK(lstm.bytes == 4 * (112 + 32 + 6 + 8 + 8 + 8 + 8));
  // Two GEMMs: 2 * 2 * 16 * 3 + 2 * 2 * 16 * 4 = 448, plus 2 adds per gate value (64) and
  // 9 per unit for the cell (72).
  CHECK(lstm.flops == 448 + 64 + 72);
  // Backward: weights in and their gradients out, bias gradients out, x in and dx out,
  // h, c, dh in and dh_prev, dc_prev out.
  CHECK(lstm_step_cost(2, 3, 4, 4, Pass::backward).bytes == 4 * (2 * 112 + 32 + 2 * 6 + 5 * 8));

  // CTC, T 10, N 2, C 5, L 3: 100 f32 log-probabilities, 6 i64 labels, 2 f32 losses;
  // 10 * 2 * 7 cells of the recursion at 8 operations each.
  const KernelCost ctc = ctc_cost(10, 2, 5, 3, Pass::forward);
  CHECK(ctc.bytes == 4 * 100 + 8 * 6 + 4 * 2);
  CHECK(ctc.flops == 8 * 140);
  CHECK(ctc_cost(10, 2, 5, 3, Pass::backward).bytes == 4 * 200 + 8 * 6);

  // AdamW on 10 f32 parameters: p, g, m, v read, p, m, v written.
  CHECK(adamw_cost(10).bytes == 4 * 7 * 10);
}

TEST_CASE("the floor is the slower of moving the bytes and doing the flops", "[core][bench]") {
  const Ceilings ceilings{.copy_gbps = 100, .gemm_tflops = 10};
  // 1 GB at 100 GB/s is 10 ms; 1 TFLOP at 10 TFLOP/s is 100 ms.
  CHECK(floor_ms({1e9, 1e12}, ceilings) == Approx(100));
  // 10 GB is 100 ms; 1 GFLOP is 0.1 ms.
  CHECK(floor_ms({1e10, 1e9}, ceilings) == Approx(100));
  CHECK(floor_ms({2e8, 0}, ceilings) == Approx(2));
  CHECK_THROWS_AS(floor_ms({1, 1}, Ceilings{}), Error);
}

TEST_CASE("input sets rotate past the cache, within their bounds", "[core][bench]") {
  constexpr double kMiB = 1 << 20;
  CHECK(rotation_sets(10 * kMiB, 256 * kMiB, 3) == 26);  // 25.6 sets cover 256 MiB
  CHECK(rotation_sets(100 * kMiB, 256 * kMiB, 3) == 3);  // 2.56, but 3 at least
  CHECK(rotation_sets(1024, 1024 * kMiB, 3) == 64);      // capped
  CHECK(rotation_sets(1, 0, 5) == 5);                    // no cache to beat
  CHECK(rotation_sets(1, 0, 100) == 100);                // asked for more than the cap
  CHECK_THROWS_AS(rotation_sets(0, 1, 3), Error);
}
